package state

import (
	"encoding/json"
	"testing"
	"time"
)

type rec struct {
	ID     string    `json:"id"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// A lost lease leaves the leases in the same transaction, survives a
// reopen, and is pruned once it is older than lostKeep.
func TestLoseLease(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "old"} {
		if err := s.PutLease(id, rec{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []rec{{"a", "restore_failed", time.Now()}, {"old", "killed", time.Now().Add(-lostKeep - time.Hour)}} {
		if err := s.LoseLease(r.ID, r); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var left []string
	s.Leases(func(raw []byte) error {
		var r rec
		json.Unmarshal(raw, &r)
		left = append(left, r.ID)
		return nil
	})
	if len(left) != 1 || left[0] != "b" {
		t.Fatalf("leases after two were lost: %v, want [b]", left)
	}
	for _, tc := range []struct {
		id     string
		lost   bool
		reason string
	}{{"a", true, "restore_failed"}, {"b", false, ""}, {"old", false, ""}, {"never", false, ""}} {
		raw, ok := s.Lost(tc.id)
		var r rec
		json.Unmarshal(raw, &r)
		if ok != tc.lost || r.Reason != tc.reason {
			t.Errorf("Lost(%q) = %v %q, want %v %q", tc.id, ok, r.Reason, tc.lost, tc.reason)
		}
	}
}
