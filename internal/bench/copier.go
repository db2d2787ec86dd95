package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/sysmem"

	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/units"
)

// A copier makes copies of the template's database inside one server
// started on a private clone of the template: the in-server methods.
type copier interface {
	// row names the method: method, workers, eatmydata.
	row() Row
	// setup prepares once what every copy reuses (a dump, an export).
	setup(ctx context.Context, srv *template.Running, scratch string) error
	// copy makes copy number i (from 1) as database copy<i>.
	copy(ctx context.Context, i int) error
}

// checkpoint is what was measured when the n-th copy was done.
type checkpoint struct {
	seconds, cpu float64
	rss, disk    int64
}

// runCopier runs c until the largest copy count is made, the time budget
// would be exceeded, or the disk would fill, and returns one row per copy
// count: measured where reached, projected from the rate where not.
func (r *runner) runCopier(ctx context.Context, w Workload, m *catalog.Meta, c copier) []Row {
	proto := c.row()
	proto.Workload = w.Name
	label := proto.Method
	if proto.Workers > 1 {
		label += fmt.Sprintf(" x%d", proto.Workers)
	}
	if proto.EatMyData {
		label += " (eatmydata)"
	}
	want := r.opt.Copies[len(r.opt.Copies)-1]
	r.say("%s: %s: up to %d copies, budget %s", w.Name, label, want, r.opt.MaxTime)

	data := r.store.Catalog().Root().Data()
	meter, rss := newCPUMeter(), startRSS()
	defer rss.Stop()
	used0 := usedBytes(data)
	t0 := time.Now()
	errRow := func(err error) []Row {
		proto.Error = err.Error()
		r.say("%s: %s: %v", w.Name, label, err)
		return []Row{proto}
	}

	name := fmt.Sprintf("bench-%s-%d", proto.Method, time.Now().UnixNano()%1e6)
	var srv *template.Running
	err := withEatMyData(proto.EatMyData, func() error {
		var err error
		srv, err = r.store.Start(ctx, m, name)
		return err
	})
	if err != nil {
		return errRow(err)
	}
	defer srv.Close()
	scratch := filepath.Join(data, "bench-"+name)
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return errRow(err)
	}
	defer os.RemoveAll(scratch)
	if err := c.setup(ctx, srv, scratch); err != nil {
		return errRow(fmt.Errorf("setup: %w", err))
	}
	setup := time.Since(t0).Seconds()
	pid := srv.Inst.PID()

	// Copies run on the method's workers; each worker checks the budget and
	// the free space before it starts a copy.
	hard, cancel := context.WithTimeout(ctx, 2*r.opt.MaxTime)
	defer cancel()
	var (
		mu       sync.Mutex
		next     int
		done     []float64 // completion times since t0
		spent    float64   // sum of copy durations
		points   = map[int]checkpoint{}
		stopped  string
		firstErr error
		wg       sync.WaitGroup
	)
	perCopyDisk := m.Bytes
	grab := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if stopped != "" || firstErr != nil || next >= want {
			return 0, false
		}
		elapsed := time.Since(t0).Seconds()
		if n := len(done); n > 0 {
			avg := spent / float64(n)
			if elapsed+avg > r.opt.MaxTime.Seconds() {
				stopped = "max-time"
				return 0, false
			}
			perCopyDisk = max(perCopyDisk, (usedBytes(data)-used0)/int64(n+proto.Workers))
		}
		if free := freeBytes(data); free < perCopyDisk*int64(max(proto.Workers, 1))+256<<20 {
			stopped = "disk"
			return 0, false
		}
		if sysmem.AvailableOr(0) < memFloor {
			stopped = "memory"
			return 0, false
		}
		next++
		return next, true
	}
	workers := max(proto.Workers, 1)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := grab()
				if !ok {
					return
				}
				ts := time.Now()
				err := c.copy(hard, i)
				mu.Lock()
				if err != nil {
					if !srv.Inst.Running() {
						err = fmt.Errorf("%w; the server died: %s", err, srv.Inst.LogTail(8))
					}
					if firstErr == nil {
						firstErr = fmt.Errorf("copy %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				spent += time.Since(ts).Seconds()
				done = append(done, time.Since(t0).Seconds())
				n := len(done)
				if isCheckpoint(r.opt.Copies, n) {
					points[n] = checkpoint{seconds: done[n-1], cpu: meter.seconds([]int{pid}), rss: rss.Peak(), disk: usedBytes(data) - used0}
				}
				if n%10 == 0 || n == 1 {
					r.say("%s: %s: %d copies in %.1fs", w.Name, label, n, done[n-1])
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil && len(done) == 0 {
		if errors.Is(hard.Err(), context.DeadlineExceeded) {
			// Not one copy in twice the budget: the rows are lower bounds.
			return lowerBounds(proto, r.opt.Copies, setup, (2 * r.opt.MaxTime).Seconds(), workers)
		}
		return errRow(firstErr)
	}
	if len(done) == 0 {
		return errRow(fmt.Errorf("stopped before the first copy: not enough free %s for %d copies at once of about %s each", stopped, workers, units.Bytes(perCopyDisk)))
	}
	if firstErr != nil && stopped == "" {
		stopped = "error: " + firstErr.Error()
		if errors.Is(hard.Err(), context.DeadlineExceeded) {
			stopped = "max-time"
		}
	}
	sort.Float64s(done)
	last := checkpoint{seconds: time.Since(t0).Seconds(), cpu: meter.seconds([]int{pid}), rss: rss.Peak(), disk: usedBytes(data) - used0}
	if n := len(done); n > 0 {
		last.seconds = done[n-1]
	}
	return copyRows(proto, r.opt.Copies, setup, done, points, last, stopped)
}

// memFloor is the memory left to the rest of the machine: a method stops
// before it starts a copy with less than this available.
const memFloor = 1536 << 20

// lowerBounds are the rows of a method whose first copies did not finish
// within limit seconds after its setup: each of the workers' copies takes
// more than limit, so N copies take at least setup + N*limit/workers.
func lowerBounds(proto Row, counts []int, setup, limit float64, workers int) []Row {
	var rows []Row
	for _, n := range counts {
		row := proto
		row.Copies, row.SetupSeconds, row.MeasuredSeconds = n, setup, limit
		row.Seconds = lowerBound(setup, limit, n, workers)
		row.Projected, row.LowerBound = true, true
		row.Stopped = fmt.Sprintf("max-time: no copy finished in %.0f s, so the time is a lower bound", limit)
		rows = append(rows, finished(row))
	}
	return rows
}

func lowerBound(setup, limit float64, n, workers int) float64 {
	return setup + float64(n)*limit/float64(max(workers, 1))
}

// copyRows turns the completion times into one row per copy count.
func copyRows(proto Row, counts []int, setup float64, done []float64, points map[int]checkpoint, last checkpoint, stopped string) []Row {
	var rows []Row
	n := len(done)
	for _, want := range counts {
		row := proto
		row.Copies, row.SetupSeconds = want, setup
		if n >= want {
			p, ok := points[want]
			if !ok {
				p = last
			}
			row.Measured, row.MeasuredSeconds, row.Seconds = want, done[want-1], done[want-1]
			row.CPUPerCopy = p.cpu / float64(want)
			row.PeakRSSMB, row.DiskMB = float64(p.rss)/(1<<20), float64(p.disk)/(1<<20)
		} else {
			// Projection: setup plus the measured time per copy (wall time
			// of the copies over their number, so parallel workers count).
			rate := (last.seconds - setup) / float64(max(n, 1))
			row.Measured, row.MeasuredSeconds = n, last.seconds
			row.Seconds = setup + rate*float64(want)
			row.Projected, row.Stopped = true, stopped
			row.CPUPerCopy = last.cpu / float64(max(n, 1))
			row.PeakRSSMB = float64(last.rss) / (1 << 20)
			row.DiskMB = float64(last.disk) / float64(max(n, 1)) * float64(want) / (1 << 20)
		}
		row.finish()
		rows = append(rows, row)
	}
	return rows
}

func isCheckpoint(counts []int, n int) bool {
	for _, c := range counts {
		if c == n {
			return true
		}
	}
	return false
}

// withEatMyData runs f with LD_PRELOAD naming libeatmydata when on is set,
// so a server started inside f ignores fsync.
func withEatMyData(on bool, f func() error) error {
	if !on {
		return f()
	}
	lib, err := eatMyDataLib()
	if err != nil {
		return err
	}
	old, had := os.LookupEnv("LD_PRELOAD")
	os.Setenv("LD_PRELOAD", lib)
	defer func() {
		if had {
			os.Setenv("LD_PRELOAD", old)
		} else {
			os.Unsetenv("LD_PRELOAD")
		}
	}()
	return f()
}

// eatMyDataLib finds libeatmydata.so.
func eatMyDataLib() (string, error) {
	for _, pat := range []string{"/usr/lib/*/libeatmydata.so*", "/usr/lib/libeatmydata.so*", "/usr/lib64/libeatmydata.so*"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return m[0], nil
		}
	}
	return "", errors.New("eatmydata: libeatmydata.so not found: install it (apt-get install eatmydata) or drop --eatmydata")
}

// eatEnv is the environment of a client run under eatmydata.
func eatEnv(on bool) []string {
	if !on {
		return nil
	}
	lib, err := eatMyDataLib()
	if err != nil {
		return nil
	}
	return append(os.Environ(), "LD_PRELOAD="+lib)
}
