package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demorun"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/sysmem"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/server"
)

// ServiceRow is what the service section measured on one template: the
// figures a test suite sees through the daemon.
type ServiceRow struct {
	Template   string  `json:"template"`
	Scale      float64 `json:"scale"`
	TemplateMB float64 `json:"template_mb"`
	// BuildSeconds is the template's build from the SQL dump.
	BuildSeconds float64 `json:"build_seconds"`
	Slots        int     `json:"slots"`
	// PoolUpSeconds is Slots slots ready from the built template;
	// FromSQLSeconds adds the build.
	PoolUpSeconds  float64 `json:"pool_up_seconds"`
	FromSQLSeconds float64 `json:"from_sql_seconds"`
	Leases         int     `json:"leases"`
	LeaseP50MS     float64 `json:"lease_p50_ms"`
	LeaseP99MS     float64 `json:"lease_p99_ms"`
	RSSMeanMB      float64 `json:"rss_mean_mb"`
	RSSMaxMB       float64 `json:"rss_max_mb"`
	// PSSMeanMB is the proportional set size per slot: what the slots
	// share (the server's code) is divided among them.
	PSSMeanMB float64 `json:"pss_mean_mb"`
	// Runs are the pool-ups PoolUpSeconds is the median of, each with
	// the resets of every slot at once that followed it.
	Runs []demorun.PoolRun `json:"runs,omitempty"`
	// AllResetP99MS is the median over Runs of the reset p99 when every
	// slot is released at once.
	AllResetP99MS float64 `json:"all_reset_p99_ms,omitempty"`
	// Resets single resets of a released slot in an otherwise idle pool.
	Resets     int     `json:"resets"`
	ResetP50MS float64 `json:"reset_p50_ms"`
	ResetP99MS float64 `json:"reset_p99_ms"`
	ResetMaxMS float64 `json:"reset_max_ms"`
	// DumpLoad1Seconds is one copy by mariadb-dump | mariadb in this run;
	// DumpLoadNSeconds is Slots copies, measured or projected.
	DumpLoad1Seconds   float64 `json:"dumpload_1_seconds,omitempty"`
	DumpLoadNSeconds   float64 `json:"dumpload_n_seconds,omitempty"`
	DumpLoadNProjected bool    `json:"dumpload_n_projected,omitempty"`
	// Limited says why Slots is smaller than asked.
	Limited string `json:"limited,omitempty"`
	Error   string `json:"error,omitempty"`
}

// slotsThatFit is how many slots of m the memory available now holds, by
// the pool's own estimate, leaving the pool's reserve and a little more.
func (r *runner) slotsThatFit(m *catalog.Meta) int {
	mem, _ := pool.SlotCost(r.store.Catalog().Backend(), m, mariadb.DefaultProfile())
	return int((sysmem.AvailableOr(0) - 2<<30) / mem)
}

// service measures, through an in-process daemon on the root's socket, a
// pool of ServiceSlots slots of the demo template (pool up, lease latency,
// memory per instance) and single resets of an idle pool on the demo
// template and on one ServiceScale times larger.
func (r *runner) service(ctx context.Context) error {
	c, stop, err := demorun.ServeInProcess(ctx, r.store)
	if err != nil {
		return err
	}
	defer stop()

	for _, scale := range []float64{1, r.opt.ServiceScale} {
		row := r.serviceTemplate(ctx, c, scale)
		r.rep.Service = append(r.rep.Service, row)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) serviceTemplate(ctx context.Context, c *client.Client, scale float64) ServiceRow {
	w := Workload{Name: fmt.Sprintf("service-x%g", scale), Demo: demo.Options{Scale: scale}}
	row := ServiceRow{Template: "bench-" + w.Name, Scale: scale}
	fail := func(err error) ServiceRow {
		row.Error = err.Error()
		r.say("service %s: %v", w.Name, err)
		return row
	}
	m, err := r.buildTemplate(ctx, w, 1, "")
	if err != nil {
		return fail(err)
	}
	defer r.removeTemplate(m)
	row.TemplateMB, row.BuildSeconds = float64(m.Bytes)/(1<<20), m.BuildSeconds

	// Pool up, lease every slot, memory: on the demo-sized template only.
	if scale == 1 {
		row.Slots = r.opt.ServiceSlots
		if fit := r.slotsThatFit(m); fit < row.Slots {
			row.Limited = fmt.Sprintf("%d slots asked, %d fit in the memory available", row.Slots, fit)
			row.Slots = max(fit, 1)
		}
		cold := !r.has(MethodThin)
		var ups, p99s []float64
		for i := 0; i < r.opt.ServiceRuns; i++ {
			state := "warm"
			if i == 0 && cold {
				state = "cold"
			}
			r.say("service %s: %d slots through the daemon, run %d of %d (%s, load average %s)", w.Name, row.Slots, i+1, r.opt.ServiceRuns, state, stats.LoadAverage())
			demorun.Settle(ctx, r.store)
			run, err := r.serviceRun(ctx, c, m.Name, &row, i == 0)
			if err != nil {
				return fail(err)
			}
			run.State = state
			row.Runs = append(row.Runs, *run)
			ups, p99s = append(ups, run.PoolUpSeconds), append(p99s, run.ResetP99MS)
		}
		row.PoolUpSeconds, row.AllResetP99MS = stats.Median(ups), stats.Median(p99s)
		row.FromSQLSeconds = round3(row.PoolUpSeconds + m.BuildSeconds)
		r.dumpLoadBeside(ctx, &row, m)
	}

	// Single resets of an otherwise idle pool of two slots.
	r.say("service %s: %d single resets", w.Name, r.opt.Resets)
	t0 := time.Now()
	if _, err := c.PoolUp(ctx, server.PoolRequest{Template: m.Name, Size: 2}, nil); err != nil {
		return fail(err)
	}
	if row.Slots == 0 {
		row.Slots, row.PoolUpSeconds = 2, round3(time.Since(t0).Seconds())
		row.FromSQLSeconds = round3(row.PoolUpSeconds + m.BuildSeconds)
	}
	defer c.PoolDown(context.WithoutCancel(ctx), m.Name)
	for range r.opt.Resets {
		l, err := c.Lease(ctx, server.LeaseRequest{Template: m.Name, Holder: "bench", Wait: 60})
		if err != nil {
			return fail(err)
		}
		if _, err := c.Release(ctx, l.ID, false); err != nil {
			return fail(err)
		}
		if err := demorun.WaitReady(ctx, c, m.Name, 2); err != nil {
			return fail(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ps, err := c.Pool(ctx, m.Name)
	if err != nil {
		return fail(err)
	}
	row.Resets = r.opt.Resets
	row.ResetP50MS, row.ResetP99MS, row.ResetMaxMS = ps.ResetP50MS, ps.ResetP99MS, ps.ResetMaxMS
	r.say("service %s: reset p50 %.0f ms, p99 %.0f ms", w.Name, row.ResetP50MS, row.ResetP99MS)
	return row
}

// dumpLoadBeside fills the dump|load figures of a service row: from the
// serial dumpload rows of the demo workload of this run, or one copy
// measured now and projected.
func (r *runner) dumpLoadBeside(ctx context.Context, row *ServiceRow, m *catalog.Meta) {
	for _, x := range r.rep.Rows {
		if x.Workload != "demo" || x.Method != MethodDumpLoad || x.Workers != 1 || x.EatMyData || x.Error != "" {
			continue
		}
		if x.Copies == 1 {
			row.DumpLoad1Seconds = x.Seconds
		}
		if x.Copies == row.Slots {
			row.DumpLoadNSeconds, row.DumpLoadNProjected = x.Seconds, x.Projected
		}
	}
	if row.DumpLoad1Seconds > 0 && row.DumpLoadNSeconds > 0 {
		return
	}
	r.say("service: timing one copy by mariadb-dump | mariadb")
	d, err := demorun.DumpLoadOnce(ctx, r.store, m)
	if err != nil {
		row.Error = "dump|load: " + err.Error()
		return
	}
	row.DumpLoad1Seconds = round3(d.Seconds())
	if row.DumpLoadNSeconds == 0 {
		row.DumpLoadNSeconds, row.DumpLoadNProjected = round3(d.Seconds()*float64(row.Slots)), row.Slots > 1
	}
}

// serviceRun is one pool-up of the service section (demorun.PoolCycle). The first
// run fills the lease and memory figures of row.
func (r *runner) serviceRun(ctx context.Context, c *client.Client, name string, row *ServiceRow, first bool) (*demorun.PoolRun, error) {
	var leased func([]*api.Lease, []float64) error
	if first {
		leased = func(_ []*api.Lease, waits []float64) error {
			row.Leases = len(waits)
			row.LeaseP50MS, row.LeaseP99MS = stats.Quantile(waits, 0.5), stats.Quantile(waits, 0.99)
			row.RSSMeanMB, row.RSSMaxMB, row.PSSMeanMB = demorun.SlotMemory(ctx, c, name)
			return nil
		}
	}
	run, err := demorun.PoolCycle(ctx, c, name, row.Slots, 1, "bench", leased)
	if err != nil {
		return nil, err
	}
	run.PoolUpSeconds = round3(run.PoolUpSeconds)
	return run, nil
}
