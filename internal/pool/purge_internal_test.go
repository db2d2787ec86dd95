package pool

import "testing"

// The in-place reset waits for the purge while one of the pool's last
// marksWindow leases was released --unchanged, and only then.
func TestMarksRead(t *testing.T) {
	for _, tc := range []struct {
		name            string
		checked, leases int64
		want            bool
	}{
		{"no release --unchanged yet", 0, 500, false},
		{"one with the latest lease", 501, 500, true},
		{"one before the window's last lease", 501 - marksWindow + 1, 500, true},
		{"one before the window", 501 - marksWindow, 500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pool{checked: tc.checked}
			p.stats.Leases = tc.leases
			if got := p.marksRead(); got != tc.want {
				t.Errorf("marksRead() with checked %d after %d leases = %v, want %v", tc.checked, tc.leases, got, tc.want)
			}
		})
	}
}
