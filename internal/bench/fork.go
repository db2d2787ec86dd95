package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demorun"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/template"
)

// ForkOptions shape `pristine-bench fork` (issue 36, "Numbers to reach").
type ForkOptions struct {
	// Scale is the demo template's data scale (1: 51 tables, about 110 MB).
	Scale float64
	// Factor is how many times larger the second template is (default 10).
	Factor float64
	// Forks is how many forks of each template are timed (p50 of them).
	Forks int
	// Soak is the lease loop run on the template built from SQL and on a
	// fork of it, one after the other; Template and Log are set here.
	Soak SoakOptions
	Log  io.Writer
}

// ForkTimes is one template's forks: a lease of it, one row deleted,
// then POST /v1/leases/{id}/fork.
type ForkTimes struct {
	Template string  `json:"template"`
	Scale    float64 `json:"scale"`
	Bytes    int64   `json:"bytes"`
	Forks    int     `json:"forks"`
	// DaemonP50S is the median of the daemon's own time of a fork (the
	// answer's seconds); WallP50S the client's, request to answer.
	DaemonP50S float64   `json:"daemon_p50_s"`
	WallP50S   float64   `json:"wall_p50_s"`
	DaemonS    []float64 `json:"daemon_s"`
	// PhasesP50 is where a fork's time goes: each phase's median over
	// the forks, in the order the daemon ran them.
	PhasesP50 []api.Phase `json:"phases_p50"`
}

// ForkReport is what a run of `pristine-bench fork` measured.
type ForkReport struct {
	Server     string `json:"server"`
	Backend    string `json:"backend"`
	Cores      int    `json:"cores"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`

	Small ForkTimes `json:"small"`
	Large ForkTimes `json:"large"`
	// Ratio is the large template's fork p50 over the small one's (the
	// daemon's times): 1 when the cost does not grow with the data.
	Ratio float64 `json:"ratio"`

	// FromSQL and Fork are the same lease loop on the small template
	// (built from SQL) and on one of its forks, in this run.
	FromSQL *SoakResult `json:"soak_from_sql"`
	Fork    *SoakResult `json:"soak_fork"`
	// LeaseRatio is the fork's leases/s over the SQL template's.
	LeaseRatio float64 `json:"lease_ratio"`
}

// Fork builds the demo template at opt.Scale and at opt.Scale*opt.Factor
// in store (kept, as builds are), times opt.Forks forks of a written
// lease of each through an in-process daemon, then runs the same lease
// loop on the small template and on a fork of it. The forks it made are
// removed; no pool is left up.
func Fork(ctx context.Context, store *template.Builder, opt ForkOptions) (*ForkReport, error) {
	if opt.Scale <= 0 {
		opt.Scale = 1
	}
	if opt.Factor <= 0 {
		opt.Factor = 10
	}
	if opt.Forks <= 0 {
		opt.Forks = 5
	}
	say := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "pristine-bench fork: "+format+"\n", args...)
		}
	}
	rep := &ForkReport{Server: store.Binary().Version, Backend: store.Catalog().Backend().Name(), Cores: runtime.NumCPU(),
		LoadBefore: stats.LoadAverage()}
	defer func() { rep.LoadAfter = stats.LoadAverage() }()

	small, err := buildDemo(ctx, store, "fork-demo", opt.Scale, say)
	if err != nil {
		return nil, err
	}
	large, err := buildDemo(ctx, store, "fork-demo-large", opt.Scale*opt.Factor, say)
	if err != nil {
		return nil, err
	}
	c, stop, err := demorun.ServeInProcess(ctx, store)
	if err != nil {
		return nil, err
	}
	defer stop()

	var forks []string // hashes of the forks made, removed at the end
	defer func() {
		for _, h := range forks {
			if err := c.AbortTemplate(context.WithoutCancel(ctx), h); err != nil {
				say("remove fork %s: %v", h[:12], err)
			}
		}
	}()
	for _, side := range []struct {
		m     *catalog.Meta
		scale float64
		out   *ForkTimes
	}{{small, opt.Scale, &rep.Small}, {large, opt.Scale * opt.Factor, &rep.Large}} {
		say("timing %d forks of a written lease of %s (%.0f MB; load average %s)", opt.Forks, side.m.Name, float64(side.m.Bytes)/1e6, stats.LoadAverage())
		*side.out = ForkTimes{Template: side.m.Name, Scale: side.scale, Bytes: side.m.Bytes, Forks: opt.Forks}
		hashes, err := timeForks(ctx, c, side.m.Name, opt.Forks, side.out)
		forks = append(forks, hashes...)
		if err != nil {
			return nil, err
		}
	}
	rep.Ratio = ratioOf(rep.Large.DaemonP50S, rep.Small.DaemonP50S)

	// The lease loop (no pool is up now): the template built from SQL,
	// then its last fork.
	forkName := small.Name + "-fork"
	for _, s := range []struct {
		name string
		out  **SoakResult
	}{{small.Name, &rep.FromSQL}, {forkName, &rep.Fork}} {
		o := opt.Soak
		o.Template, o.Log = s.name, opt.Log
		say("lease loop on %s: %d clients x %d cycles, pool %d", s.name, o.Clients, o.Cycles, o.Size)
		r, err := Soak(ctx, c, store.Catalog().Root(), o)
		if err != nil {
			return nil, fmt.Errorf("lease loop on %s: %w", s.name, err)
		}
		if r.NotPristine > 0 || r.Errors > 0 {
			return nil, fmt.Errorf("lease loop on %s: %d leases not pristine, %d errors (first: %s)", s.name, r.NotPristine, r.Errors, r.FirstError)
		}
		*s.out = r
	}
	rep.LeaseRatio = ratioOf(rep.Fork.LeasesPerSec, rep.FromSQL.LeasesPerSec)
	return rep, nil
}

// buildDemo builds (or finds) the demo template at scale under name.
func buildDemo(ctx context.Context, store *template.Builder, name string, scale float64, say func(string, ...any)) (*catalog.Meta, error) {
	say("building %s: the demo schema at scale %g (load average %s)", name, scale, stats.LoadAverage())
	m, err := demorun.BuildDemo(ctx, store, name, scale, 2)
	if err != nil {
		return nil, err
	}
	say("%s: %.0f MB, built in %.1f s", name, float64(m.Bytes)/1e6, m.BuildSeconds)
	return m, nil
}

// timeForks brings a pool of two slots of name up, and n times leases a
// database, deletes a row of the canary table (the soak's write), forks
// the lease as name-fork, and releases it. It fills out and returns the
// forks' hashes; the last fork is kept under name-fork for the lease
// loop, the others removed at once (the caller removes the last). The
// pool goes down at the end.
func timeForks(ctx context.Context, c *client.Client, name string, n int, out *ForkTimes) (hashes []string, err error) {
	if _, err := c.PoolUp(ctx, server.PoolRequest{Template: name, Size: 2, MinReady: 2}, nil); err != nil {
		return nil, fmt.Errorf("pool up %s: %w", name, err)
	}
	defer func() {
		if _, derr := c.PoolDown(context.WithoutCancel(ctx), name); derr != nil && err == nil {
			err = derr
		}
	}()
	table, _, err := canary(ctx, c, name)
	if err != nil {
		return nil, err
	}
	var wall []float64
	phases := map[string][]float64{}
	var order []string
	for i := 0; i < n; i++ {
		a, took, err := forkOnce(ctx, c, name, table)
		if err != nil {
			return hashes, err
		}
		if i < n-1 {
			if err := c.AbortTemplate(ctx, a.Template.Hash); err != nil {
				return hashes, fmt.Errorf("remove fork %s: %w", a.Template.Hash[:12], err)
			}
		} else {
			hashes = append(hashes, a.Template.Hash)
		}
		out.DaemonS = append(out.DaemonS, a.Seconds)
		wall = append(wall, took.Seconds())
		for _, ph := range a.Phases {
			if _, seen := phases[ph.Name]; !seen {
				order = append(order, ph.Name)
			}
			phases[ph.Name] = append(phases[ph.Name], ph.Seconds)
		}
	}
	out.DaemonP50S, out.WallP50S = stats.Quantile(out.DaemonS, 0.5), stats.Quantile(wall, 0.5)
	for _, name := range order {
		out.PhasesP50 = append(out.PhasesP50, api.Phase{Name: name, Seconds: stats.Quantile(phases[name], 0.5)})
	}
	return hashes, nil
}

// forkOnce leases a database of name, deletes a row of table, and forks
// the lease as name-fork; the lease is released, its connection open
// until after the fork.
func forkOnce(ctx context.Context, c *client.Client, name, table string) (*api.ForkAnswer, time.Duration, error) {
	l, err := c.Lease(ctx, server.LeaseRequest{Template: name, Holder: "pristine-bench fork", Wait: 120})
	if err != nil {
		return nil, 0, err
	}
	defer c.Release(context.WithoutCancel(ctx), l.ID, false)
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	if err := write(ctx, db, []string{table}, false); err != nil {
		return nil, 0, err
	}
	t := time.Now()
	a, err := c.Fork(ctx, l.ID, name+"-fork", "")
	if err != nil {
		return nil, 0, fmt.Errorf("fork a lease of %s: %w", name, err)
	}
	return a, time.Since(t), nil
}

// ratioOf is a / b, 0 when b is not positive.
func ratioOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// ForkMarkdown writes rep as the tables of docs/benchmarks.md's fork
// section.
func ForkMarkdown(w io.Writer, rep *ForkReport) error {
	fmt.Fprintf(w, "%s, %s backend, %d cores, load average %s before, %s after.\n\n", rep.Server, rep.Backend, rep.Cores, rep.LoadBefore, rep.LoadAfter)
	fmt.Fprint(w, "| template | scale | size | forks | fork p50 (daemon) | fork p50 (client) | each (daemon) |\n|---|---|---|---|---|---|---|\n")
	for _, t := range []ForkTimes{rep.Small, rep.Large} {
		fmt.Fprintf(w, "| %s | %g | %.0f MB | %d | %.3f s | %.3f s | %s |\n", t.Template, t.Scale, float64(t.Bytes)/1e6, t.Forks, t.DaemonP50S, t.WallP50S, seconds(t.DaemonS))
	}
	fmt.Fprintf(w, "\nlarge / small fork p50: %.2f\n\n", rep.Ratio)
	fmt.Fprint(w, "| phase (p50 of the forks) | small | large |\n|---|---|---|\n")
	for _, ph := range rep.Small.PhasesP50 {
		large := 0.0
		for _, l := range rep.Large.PhasesP50 {
			if l.Name == ph.Name {
				large = l.Seconds
			}
		}
		fmt.Fprintf(w, "| %s | %.3f s | %.3f s |\n", ph.Name, ph.Seconds, large)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "| lease loop on | clients | cycles | pool | hold | leases/s | lease wait p50 / p99 | reset p50 | load before -> after |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range []struct {
		what string
		r    *SoakResult
	}{{"template from SQL (" + rep.Small.Template + ")", rep.FromSQL}, {"its fork", rep.Fork}} {
		if s.r == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.0f ms | %.1f | %.1f / %.1f ms | %.0f ms | %s -> %s |\n", s.what, s.r.Clients, s.r.Cycles, s.r.PoolSize, s.r.HoldMS,
			s.r.LeasesPerSec, s.r.LeaseP50MS, s.r.LeaseP99MS, s.r.ResetP50MS, s.r.LoadBefore, s.r.LoadAfter)
	}
	_, err := fmt.Fprintf(w, "\nfork / SQL template leases/s: %.2f\n", rep.LeaseRatio)
	return err
}

// seconds formats times as "0.412, 0.398 s".
func seconds(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.3f", x)
	}
	return s + " s"
}
