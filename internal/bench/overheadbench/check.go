package overheadbench

import (
	"errors"
	"fmt"
	"io"
)

// Bounds are the most each ratio of a Report may be; 0 leaves a ratio
// unchecked. They are generous on purpose: a loaded machine moves a ratio
// by tens of percent, a regression like a per-slot walk of every record
// or a second snapshot per slot moves it by more.
type Bounds struct {
	StartCPU  float64 // pristine's CPU per slot over a bare start's (StartCPURatio)
	StartWall float64 // the pool's wall over the bare servers' (StartWallRatio)
	ResetCPU  float64 // an in-place reset's CPU over the bare restore's
	ResetWall float64 // an in-place reset's wall over the bare restore's
}

// DefaultBounds are the CI guard's.
var DefaultBounds = Bounds{StartCPU: 1, StartWall: 4, ResetCPU: 20, ResetWall: 20}

// ErrOverBound is wrapped by Check's error.
var ErrOverBound = errors.New("pristine's overhead passed its bound")

// Check returns an error naming every ratio of r over its bound, and the
// resets that did not run in place (a full reset is no in-place reset's
// figure), or nil.
func (r *Report) Check(b Bounds) error {
	var errs []error
	for _, c := range []struct {
		name        string
		ratio, most float64
	}{
		{"start CPU (pristine's per slot beyond a bare start, over the bare start's)", r.StartCPURatio, b.StartCPU},
		{"start wall (pool over bare servers)", r.StartWallRatio, b.StartWall},
		{"reset CPU (in-place reset of one table over its bare restore)", r.ResetCPURatio, b.ResetCPU},
		{"reset wall (in-place reset of one table over its bare restore)", r.ResetWallRatio, b.ResetWall},
	} {
		if c.most > 0 && c.ratio > c.most {
			errs = append(errs, fmt.Errorf("%w: %s is %.2f, over %.2f", ErrOverBound, c.name, c.ratio, c.most))
		}
	}
	if r.Resets > 0 && r.ResetsInPlace < int64(r.Resets) {
		errs = append(errs, fmt.Errorf("%w: %d of %d resets of one changed table ran in place", ErrOverBound, r.ResetsInPlace, r.Resets))
	}
	return errors.Join(errs...)
}

// Markdown prints r as a table.
func Markdown(w io.Writer, r *Report) error {
	_, err := fmt.Fprintf(w, `pristine-bench overhead: %s, %s backend, %d cores, load average %s -> %s

| check | bare | pristine | ratio |
|---|---:|---:|---:|
| %d servers started, wall | %.2f s | %.2f s | %.2f |
| CPU per server start (server and starter) | %.1f ms | %.1f ms | overhead %.2f |
| of which the server's | %.1f ms | %.1f ms | |
| reset of one changed table (%s), wall, median of %d | %.1f ms | %.1f ms | %.2f |
| reset of one changed table, CPU | %.1f ms | %.1f ms | %.2f |

%d of %d resets ran in place.
`, r.Server, r.Backend, r.Cores, r.LoadBefore, r.LoadAfter,
		r.Slots, r.BareStartWallS, r.PoolStartWallS, r.StartWallRatio,
		r.BareStartCPUMS, r.PoolStartCPUMS, r.StartCPURatio,
		r.BareServerCPUMS, r.PoolServerCPUMS,
		r.Table, r.Resets, r.BareResetMS, r.PoolResetMS, r.ResetWallRatio,
		r.BareResetCPUMS, r.PoolResetCPUMS, r.ResetCPURatio,
		r.ResetsInPlace, r.Resets)
	return err
}
