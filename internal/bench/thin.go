package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
)

// backendByName opens a backend of the store's data directory.
func backendByName(st *template.Builder, name string) (cow.Backend, error) {
	return cow.ByName(st.Catalog().Root(), name, st.Catalog().Root().Data())
}

// backends lists the backends thin slots are measured on: those asked for,
// or every one the data directory's filesystem supports, best first.
func (r *runner) backends() []string {
	if len(r.opt.Backends) > 0 {
		return r.opt.Backends
	}
	var out []string
	for _, b := range []string{"btrfs", "reflink", "copy"} {
		if _, err := backendByName(r.store, b); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// thin measures pools of slots on every backend and K databases per slot:
// N copies are ceil(N/K) slots brought up from the built template.
func (r *runner) thin(ctx context.Context, w Workload, m1 *catalog.Meta) error {
	for _, k := range r.opt.DBsPerSlot {
		m := m1
		if est := r.importSeconds(w.Name) * float64(k-1); k > 1 && est > r.opt.MaxTime.Seconds() {
			r.say("%s: thin, %d per slot: skipped, the template would take about %.0f s to build", w.Name, k, est)
			r.add(r.projectK(w.Name, k, est))
			continue
		}
		if k > 1 {
			var err error
			if m, err = r.buildTemplate(ctx, w, k, ""); err != nil {
				r.add([]Row{{Workload: w.Name, Method: MethodThin, DBsPerSlot: k, Error: err.Error()}})
				continue
			}
		}
		for _, b := range r.backends() {
			r.add(r.thinRows(ctx, w, m, b, k))
			if ctx.Err() != nil {
				break
			}
		}
		if k > 1 {
			r.removeTemplate(m)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// thinRows brings up one pool per copy count on backend b. The template
// was built on the store's backend; other backends clone from the same
// directory (a reflink or a copy of a btrfs subvolume's files is an
// ordinary one), and the template's record is put back afterwards.
func (r *runner) thinRows(ctx context.Context, w Workload, m *catalog.Meta, b string, k int) []Row {
	proto := Row{Workload: w.Name, Method: MethodThin, Backend: b, DBsPerSlot: k}
	mb := m
	if b != m.Backend {
		cp := *m
		cp.Backend = b
		mb = &cp
		defer r.store.Catalog().Touch(m) // pool.Up records its template's backend
	}
	var rows []Row
	var lastSlots int
	var lastSecs float64
	for _, n := range r.opt.Copies {
		row := proto
		row.Copies = n
		slots := (n + k - 1) / k
		if lastSlots > 0 {
			if proj := lastSecs / float64(lastSlots) * float64(slots); proj > r.opt.MaxTime.Seconds() {
				row.Stopped = "max-time"
				row.Seconds, row.Projected = proj, true
				row.Measured, row.MeasuredSeconds = lastSlots*k, lastSecs
				rows = append(rows, finished(row))
				continue
			}
		}
		r.say("%s: thin %s, %d per slot: %d slots", w.Name, b, k, slots)
		secs, err := r.onePool(ctx, mb, slots, &row)
		switch {
		case errors.Is(err, pool.ErrNoRoom) && lastSlots > 0:
			row.Stopped = "memory or disk: " + err.Error()
			row.Seconds, row.Projected = lastSecs/float64(lastSlots)*float64(slots), true
			row.Measured, row.MeasuredSeconds = lastSlots*k, lastSecs
		case err != nil:
			row.Error = err.Error()
			r.say("%s: thin %s: %v", w.Name, b, err)
		default:
			row.Seconds, row.Measured, row.MeasuredSeconds = secs, n, secs
			lastSlots, lastSecs = slots, secs
		}
		rows = append(rows, finished(row))
		if ctx.Err() != nil {
			break
		}
	}
	return rows
}

// importSeconds is the measured time per copy of the import method on a
// workload in this run (what each extra database of a --dbs-per-slot
// template costs to build), or 0.
func (r *runner) importSeconds(workload string) float64 {
	for _, x := range r.rep.Rows {
		if x.Workload == workload && x.Method == MethodImport && x.Error == "" {
			return (x.MeasuredSeconds - x.SetupSeconds) / float64(max(x.Measured, 1))
		}
	}
	// Not measured: a copy costs about what loading the template did.
	for _, wl := range r.rep.Workloads {
		if wl.Name == workload {
			return wl.BuildSeconds
		}
	}
	return 0
}

// projectK projects thin rows with k databases per slot from the rows
// with one per slot, when building the k-database template would exceed
// the budget: ceil(N/k) slots at the measured time per slot.
func (r *runner) projectK(workload string, k int, build float64) []Row {
	var rows []Row
	for _, x := range r.rep.Rows {
		if x.Workload != workload || x.Method != MethodThin || x.DBsPerSlot != 1 || x.Error != "" || x.Projected {
			continue
		}
		row := x
		row.DBsPerSlot, row.Projected = k, true
		row.Stopped = fmt.Sprintf("max-time: building the template with %d databases would take about %.0f s (%d IMPORT copies)", k, build, k-1)
		row.Measured, row.MeasuredSeconds = x.Copies, x.Seconds
		slotsK := (x.Copies + k - 1) / k
		row.Seconds = x.Seconds / float64(x.Copies) * float64(slotsK)
		row.CPUPerCopy = x.CPUPerCopy / float64(k)
		row.PeakRSSMB = x.PeakRSSMB / float64(x.Copies) * float64(slotsK)
		row.DiskMB = x.DiskMB / float64(x.Copies) * float64(slotsK)
		rows = append(rows, finished(row))
	}
	return rows
}

func finished(row Row) Row { row.finish(); return row }

// onePool brings up a pool of n slots, records its figures in row and
// takes it down again.
func (r *runner) onePool(ctx context.Context, m *catalog.Meta, n int, row *Row) (float64, error) {
	data := r.store.Catalog().Root().Data()
	meter, rss := newCPUMeter(), startRSS()
	defer rss.Stop()
	used0 := usedBytes(data)
	t0 := time.Now()
	p, err := pool.Up(ctx, r.store.Catalog(), r.store.Binary(), m, pool.Options{Size: n})
	if err != nil {
		return 0, err
	}
	secs := time.Since(t0).Seconds()
	var pids []int
	for _, s := range p.Status(true).Slots {
		if s.PID > 0 {
			pids = append(pids, s.PID)
		}
	}
	row.CPUPerCopy = meter.seconds(pids) / float64(row.Copies)
	row.PeakRSSMB = float64(rss.Peak()) / (1 << 20)
	row.DiskMB = float64(usedBytes(data)-used0) / (1 << 20)
	if err := p.Down(context.WithoutCancel(ctx)); err != nil {
		return secs, fmt.Errorf("pool down: %w", err)
	}
	return secs, nil
}
