package server

import (
	"testing"
	"time"
)

// TestQuietLog: one line per interval, and the next says how many were
// dropped meanwhile.
func TestQuietLog(t *testing.T) {
	var q quietLog
	t0 := time.Unix(1000, 0)
	for i, tc := range []struct {
		at      time.Duration
		ok      bool
		dropped int
	}{{0, true, 0}, {time.Second, false, 0}, {5 * time.Second, false, 0}, {10 * time.Second, true, 2}, {11 * time.Second, false, 0}, {30 * time.Second, true, 1}} {
		if ok, dropped := q.admit(t0.Add(tc.at), 10*time.Second); ok != tc.ok || dropped != tc.dropped {
			t.Errorf("line %d at +%s: admitted %v with %d dropped, want %v with %d", i, tc.at, ok, dropped, tc.ok, tc.dropped)
		}
	}
}
