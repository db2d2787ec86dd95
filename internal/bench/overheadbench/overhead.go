// Package overheadbench runs `pristine-bench overhead`: pristine's own cost
// of starting and resetting slots, as a ratio to what the same work costs
// without pristine in the same run. It starts N bare servers (mariadbd on
// a plain copy-on-write clone of the template, with a slot's options) and
// then a pool of N slots of the same template through an in-process
// daemon, and compares CPU and wall; then it resets one changed table in
// place, through a lease, against the SQL steps that restore that table
// on a bare server. Ratios taken in one run hold on a loaded machine,
// where absolute times do not; Check fails a run whose ratio passes its
// bound, which is what the CI guard runs.
package overheadbench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sort"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demorun"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/template"
)

// Options shape one run.
type Options struct {
	// Slots is N: bare servers and slots started (default 8).
	Slots int
	// Scale is the demo template's data scale (default 0.1, ~11 MB: the
	// start of a server does not depend on its data's size).
	Scale float64
	// Resets is how many in-place resets, and bare restores, are timed;
	// the medians are compared (default 5).
	Resets int
	Log    io.Writer
}

// Report is what a run measured. CPU is user + system time on every
// thread: of this process (the daemon, its client and the bare starter)
// and of the servers, read from /proc/PID/task/*/schedstat. The kernel's
// own threads (btrfs' transaction commits and cleaner) count nowhere.
type Report struct {
	Server     string `json:"server"`
	Backend    string `json:"backend"`
	Cores      int    `json:"cores"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	Slots      int    `json:"slots"`
	Table      string `json:"table"` // the table the reset check changes

	// Start: N bare servers, then a pool of N slots, each until every
	// server answered.
	BareStartWallS float64 `json:"bare_start_wall_s"`
	PoolStartWallS float64 `json:"pool_start_wall_s"`
	// BareStartCPUMS is a bare start's CPU per server: the servers' own,
	// and this process's cloning and starting them.
	BareStartCPUMS float64 `json:"bare_start_cpu_ms"`
	// PoolStartCPUMS is a slot's: its server's (which also answers
	// pristine's queries) and pristine's.
	PoolStartCPUMS float64 `json:"pool_start_cpu_ms"`
	// BareServerCPUMS and PoolServerCPUMS are the servers' parts of the
	// two: what a slot's server spends beyond a bare one's is what
	// pristine's queries cost it.
	BareServerCPUMS float64 `json:"bare_server_cpu_ms"`
	PoolServerCPUMS float64 `json:"pool_server_cpu_ms"`
	// StartCPURatio is pristine's CPU per slot beyond a bare start's, as
	// a ratio to the bare start's: (pool - bare) / bare.
	StartCPURatio float64 `json:"start_cpu_ratio"`
	// StartWallRatio is the pool's wall over the bare servers'.
	StartWallRatio float64 `json:"start_wall_ratio"`

	// Reset: one changed table; medians over Resets.
	BareResetMS     float64 `json:"bare_reset_ms"`
	BareResetCPUMS  float64 `json:"bare_reset_cpu_ms"`
	PoolResetMS     float64 `json:"pool_reset_ms"`
	PoolResetCPUMS  float64 `json:"pool_reset_cpu_ms"`
	ResetsInPlace   int64   `json:"resets_in_place"`
	Resets          int     `json:"resets"`
	ResetWallRatio  float64 `json:"reset_wall_ratio"`
	ResetCPURatio   float64 `json:"reset_cpu_ratio"`
	TemplateSeconds float64 `json:"template_build_seconds"`
}

// Run builds the demo template at opt.Scale in store (kept, as a build
// is), measures, and leaves no server, clone or pool behind.
func Run(ctx context.Context, store *template.Builder, opt Options) (*Report, error) {
	if opt.Slots <= 0 {
		opt.Slots = 8
	}
	if opt.Scale <= 0 {
		opt.Scale = 0.1
	}
	if opt.Resets <= 0 {
		opt.Resets = 5
	}
	say := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "pristine-bench overhead: "+format+"\n", args...)
		}
	}
	rep := &Report{Server: store.Binary().Version, Backend: store.Catalog().Backend().Name(), Cores: runtime.NumCPU(),
		LoadBefore: stats.LoadAverage(), Slots: opt.Slots, Resets: opt.Resets}
	defer func() { rep.LoadAfter = stats.LoadAverage() }()

	m, err := demorun.BuildDemo(ctx, store, "overhead-demo", opt.Scale, 2)
	if err != nil {
		return nil, err
	}
	rep.TemplateSeconds = m.BuildSeconds
	bare, err := newBareSet(store, m)
	if err != nil {
		return nil, err
	}
	defer bare.close()

	if err := bare.claim(opt.Slots); err != nil {
		return nil, err
	}
	say("starting %d bare servers (load average %s)", opt.Slots, stats.LoadAverage())
	cpu0, t0 := selfCPU(), time.Now()
	serverCPU, err := bare.start(ctx, opt.Slots)
	if err != nil {
		return nil, err
	}
	rep.BareStartWallS = time.Since(t0).Seconds()
	rep.BareStartCPUMS = ms(selfCPU()-cpu0+serverCPU) / float64(opt.Slots)
	rep.BareServerCPUMS = ms(serverCPU) / float64(opt.Slots)
	if rep.Table, err = bare.pickTable(ctx, m.Database()); err != nil {
		return nil, err
	}
	say("restoring %s on a bare server %d times", rep.Table, opt.Resets)
	if rep.BareResetMS, rep.BareResetCPUMS, err = bare.resets(ctx, m, rep.Table, opt.Resets); err != nil {
		return nil, err
	}
	bare.stopAll() // the pool gets the machine to itself

	say("bringing up a pool of %d slots (load average %s)", opt.Slots, stats.LoadAverage())
	if err := poolSide(ctx, store, m, opt, rep); err != nil {
		return nil, err
	}
	rep.StartCPURatio = ratio(rep.PoolStartCPUMS-rep.BareStartCPUMS, rep.BareStartCPUMS)
	rep.StartWallRatio = ratio(rep.PoolStartWallS, rep.BareStartWallS)
	rep.ResetCPURatio = ratio(rep.PoolResetCPUMS, rep.BareResetCPUMS)
	rep.ResetWallRatio = ratio(rep.PoolResetMS, rep.BareResetMS)
	return rep, nil
}

// poolSide brings a pool of the template up through an in-process daemon,
// then times resets of one changed table, and takes the pool down.
func poolSide(ctx context.Context, store *template.Builder, m *catalog.Meta, opt Options, rep *Report) error {
	c, stop, err := demorun.ServeInProcess(ctx, store)
	if err != nil {
		return err
	}
	defer stop()
	defer func() { _, _ = c.PoolDown(context.WithoutCancel(ctx), m.Name) }()

	cpu0, t0 := selfCPU(), time.Now()
	if _, err := c.PoolUp(ctx, server.PoolRequest{Template: m.Name, Size: opt.Slots, MinReady: opt.Slots}, nil); err != nil {
		return fmt.Errorf("pool up: %w", err)
	}
	rep.PoolStartWallS = time.Since(t0).Seconds()
	self := selfCPU() - cpu0
	ps, err := c.Pool(ctx, m.Name)
	if err != nil {
		return err
	}
	var servers time.Duration
	for _, s := range ps.Slots {
		servers += procCPU(s.PID)
	}
	rep.PoolStartCPUMS = ms(self+servers) / float64(opt.Slots)
	rep.PoolServerCPUMS = ms(servers) / float64(opt.Slots)
	rep.PoolResetMS, rep.PoolResetCPUMS, rep.ResetsInPlace, err = poolResets(ctx, c, m, rep.Table, opt.Resets)
	return err
}

// ratio is a / b, 0 when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
