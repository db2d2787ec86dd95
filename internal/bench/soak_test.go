package bench

import (
	"testing"
	"time"
)

// The second half's rate leaves out the cycles the pool's first stock of
// ready databases served at once.
func TestSteadyRate(t *testing.T) {
	at := func(ms ...int) []cycleEnd {
		out := make([]cycleEnd, len(ms))
		for i, m := range ms {
			out[i] = cycleEnd{at: time.Duration(m) * time.Millisecond, fresh: true}
		}
		return out
	}
	stale := at(0, 0, 0, 0, 1000, 2000, 3000, 4000)
	stale[6].fresh = false
	for _, tc := range []struct {
		name string
		ends []cycleEnd
		want float64
	}{
		// 4 served at once from the stock, then one a second: the
		// whole soak's 2/s would count the stock.
		{"a stock, then a reset a second", at(0, 0, 0, 0, 1000, 2000, 3000, 4000), 1},
		{"even", at(100, 200, 300, 400, 500, 600), 10},
		{"a lease not fresh", stale, 0.75},
		{"too few", at(0, 10, 20), 0},
		{"no time", at(5, 5, 5, 5), 0},
	} {
		if got := steadyRate(tc.ends); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s: %.3f/s, want %.3f/s", tc.name, got, tc.want)
		}
	}
}
