package capture

import "testing"

func TestSameRelease(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"9.7.4-2", "9.7.4", true},
		{"9.7.4", "9.7.4-2", true},
		{"9.7.4-2", "9.7.5-1", false},
		{"8.4.3", "9.7.4", false},
		{"9.7.4-2 Debian", "9.7.4", true},
	} {
		if got := sameRelease(c.a, c.b); got != c.want {
			t.Errorf("sameRelease(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
