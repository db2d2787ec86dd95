package overheadbench

import (
	"errors"
	"strings"
	"testing"
)

// TestCheck: a report within its bounds passes; each ratio over its
// bound, and a reset that was not in place, fails, naming what.
func TestCheck(t *testing.T) {
	ok := Report{StartCPURatio: 0.4, StartWallRatio: 1.5, ResetCPURatio: 3, ResetWallRatio: 2, Resets: 5, ResetsInPlace: 5}
	b := Bounds{StartCPU: 1, StartWall: 2, ResetCPU: 5, ResetWall: 5}
	for _, c := range []struct {
		name string
		edit func(r *Report)
		want string // "" passes
	}{
		{"within bounds", func(r *Report) {}, ""},
		{"start CPU over", func(r *Report) { r.StartCPURatio = 1.2 }, "start CPU"},
		{"start wall over", func(r *Report) { r.StartWallRatio = 2.5 }, "start wall"},
		{"reset CPU over", func(r *Report) { r.ResetCPURatio = 6 }, "reset CPU"},
		{"reset wall over", func(r *Report) { r.ResetWallRatio = 7 }, "reset wall"},
		{"a full reset", func(r *Report) { r.ResetsInPlace = 4 }, "4 of 5 resets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.edit(&r)
			err := r.Check(b)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case c.want != "" && (err == nil || !errors.Is(err, ErrOverBound) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Check = %v, want ErrOverBound naming %q", err, c.want)
			}
		})
	}
	if err := (&Report{StartCPURatio: 100}).Check(Bounds{}); err != nil {
		t.Fatalf("zero bounds check nothing, got %v", err)
	}
}
