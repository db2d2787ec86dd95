// Package demorun runs `pristine demo`: it builds the demo template, brings
// a pool up through an in-process daemon, leases, queries, releases and
// times it all beside mariadb-dump | mariadb in the same run. Its pool
// cycle, slot memory and dump|load baseline are shared with the service
// section of `pristine-bench bench` (internal/bench), which imports this
// package; the product binary never imports internal/bench.
package demorun

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/template"
)

// DemoOptions shapes the main job: build the demo template, bring up a
// pool, lease, query, release, and compare with dump|load.
type DemoOptions struct {
	Slots    int     // databases to have ready (default 200): the pool's size with one database per slot
	Scale    float64 // demo data scale (1 = ~110 MB)
	Baseline bool    // also time mariadb-dump | mariadb
	// DBsPerSlot builds the template with that many copies of the
	// database in each slot's server (template build --dbs-per-slot):
	// Slots databases then take Slots/DBsPerSlot servers.
	DBsPerSlot int
	// Runs is how many times the pool is brought up, leased, reset and
	// taken down; the result reports the median (default 1).
	Runs int
	// FreshScratch says the scratch filesystem was made for this demo, so
	// the first run is cold: the filesystem has served no slot yet.
	FreshScratch bool
	Log          io.Writer
}

// DemoResult holds every figure the demo measured, with where and when:
// `pristine demo --json` prints it, and the README's sample is rendered
// from one saved (WriteText).
type DemoResult struct {
	// Started is when the demo began (UTC); Machine the host it ran on;
	// Pristine the version and commit of the binary that ran it.
	Started         time.Time  `json:"started"`
	Machine         stats.Host `json:"machine"`
	Pristine        string     `json:"pristine,omitempty"`
	Backend         string     `json:"backend"`
	Server          string     `json:"server"`
	Slots           int        `json:"slots"` // databases ready: with DBsPerSlot, in Servers servers
	TemplateBytes   int64      `json:"template_bytes"`
	TemplateSeconds float64    `json:"template_build_seconds"`
	TemplateBuilt   bool       `json:"template_built"`
	PoolUpSeconds   float64    `json:"pool_up_seconds"`
	// FirstLeaseSeconds is the median over Runs of the time from the
	// pool-up request to the first lease (PoolRun.FirstLeaseSeconds).
	FirstLeaseSeconds float64 `json:"first_lease_seconds,omitempty"`
	FromSQLSeconds    float64 `json:"from_sql_seconds"`
	LeaseP50MS        float64 `json:"lease_p50_ms"`
	LeaseP99MS        float64 `json:"lease_p99_ms"`
	QueryMS           float64 `json:"first_query_ms"`
	ResetP50MS        float64 `json:"reset_p50_ms"`
	ResetP99MS        float64 `json:"reset_p99_ms"`
	RSSMeanMB         float64 `json:"rss_mean_mb"`
	RSSMaxMB          float64 `json:"rss_max_mb"`
	// PSSMeanMB is the proportional set size per slot: its private memory
	// plus its share of what the slots share (the server's code).
	PSSMeanMB float64 `json:"pss_mean_mb"`
	// StartCPUMS is the CPU time (user + system) each slot's server used
	// from its exec until it was ready and leased, mean over the slots
	// of the first run (SlotCPU).
	StartCPUMS float64 `json:"start_cpu_ms_per_slot"`
	// IdleCPUMSPerSec is the CPU a ready slot's server uses per second
	// while it only waits, and SlotAgeSec the slots' mean age when
	// StartCPUMS was read: StartCPUMS holds about their product of
	// waiting for the rest of the pool (SlotIdle).
	IdleCPUMSPerSec  float64   `json:"idle_cpu_ms_per_sec_per_slot,omitempty"`
	SlotAgeSec       float64   `json:"slot_age_sec,omitempty"`
	Runs             []PoolRun `json:"runs"`
	LoadBefore       string    `json:"load_before"`
	LoadAfter        string    `json:"load_after"`
	DumpLoadSeconds  float64   `json:"dumpload_one_copy_seconds,omitempty"`
	DumpLoad200Proj  float64   `json:"dumpload_projected_seconds,omitempty"`
	SpeedupVsDumpLd  float64   `json:"speedup_vs_dumpload,omitempty"`
	RowsInFirstTable int64     `json:"rows_checked"`

	// DBsPerSlot is how many databases each slot's server held (absent:
	// one) and Servers how many servers the Slots databases took.
	DBsPerSlot int `json:"dbs_per_slot,omitempty"`
	Servers    int `json:"servers,omitempty"`
}

// Demo runs the main job against store, serving the pool through an
// in-process daemon on the root's socket so leases go through the API as a
// test runner's would.
func Demo(ctx context.Context, store *template.Builder, opt DemoOptions) (*DemoResult, error) {
	if opt.Slots <= 0 {
		opt.Slots = 200
	}
	if opt.Scale <= 0 {
		opt.Scale = 1
	}
	if opt.Runs <= 0 {
		opt.Runs = 1
	}
	say := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "pristine demo: "+format+"\n", args...)
		}
	}
	k := max(opt.DBsPerSlot, 1)
	res := &DemoResult{Started: time.Now().UTC().Truncate(time.Second), Machine: stats.ReadHost(), Backend: store.Catalog().Backend().Name(), Server: store.Binary().Version, Slots: opt.Slots,
		DBsPerSlot: k, Servers: (opt.Slots + k - 1) / k, LoadBefore: stats.LoadAverage()}
	ready := fmt.Sprintf("%d slots", opt.Slots)
	if k > 1 {
		ready = fmt.Sprintf("%d databases (%d slots of %d)", res.Servers*k, res.Servers, k)
	}
	defer func() { res.LoadAfter = stats.LoadAverage() }()

	// 1. The demo SQL, written by the project, then a template from it.
	sqlPath := filepath.Join(store.Catalog().Root().Path, "tmp", "demo.sql")
	if err := WriteSQL(sqlPath, demo.Options{Scale: opt.Scale, MySQL: !store.Binary().Flavor.SequenceEngine()}); err != nil {
		return nil, err
	}
	say("building template demo from %s", sqlPath)
	t0 := time.Now()
	m, built, err := store.Build(ctx, template.BuildOptions{Name: "demo", FromSQL: sqlPath, Profile: mariadb.DefaultProfile(), Workers: 4, DBsPerSlot: k})
	if err != nil {
		return nil, err
	}
	buildWall := time.Since(t0).Seconds()
	res.TemplateBytes, res.TemplateSeconds, res.TemplateBuilt = m.Bytes, m.BuildSeconds, built

	// 2. An in-process daemon, and a pool through it.
	c, stop, err := ServeInProcess(ctx, store)
	if err != nil {
		return nil, err
	}
	defer stop()

	for i := 0; i < opt.Runs; i++ {
		state := "warm"
		if i == 0 && (opt.FreshScratch || built) {
			state = "cold"
		}
		say("run %d of %d (%s): bringing up %s (load average %s)", i+1, opt.Runs, state, ready, stats.LoadAverage())
		if i > 0 {
			Settle(ctx, store)
		}
		run, err := demoRun(ctx, c, m.Name, opt, res, i == 0)
		if err != nil {
			var ae *client.APIError
			if errors.As(err, &ae) && ae.Status == http.StatusInsufficientStorage {
				// The pool's message names pool up's flags.
				return nil, fmt.Errorf("%w (in pristine demo: --slots is the pool's size, --dbs-per-slot K serves K databases from each server, --scratch-size is the scratch filesystem's)", err)
			}
			return nil, err
		}
		run.State = state
		res.Runs = append(res.Runs, *run)
		say("run %d: first lease after %.2fs, %s ready in %.2fs; reset of all at once p50 %.0f ms, p99 %.0f ms (load average %s -> %s)",
			i+1, run.FirstLeaseSeconds, ready, run.PoolUpSeconds, run.ResetP50MS, run.ResetP99MS, run.LoadBefore, run.LoadAfter)
	}
	var ups, firsts, p50s, p99s []float64
	for _, r := range res.Runs {
		ups, firsts, p50s, p99s = append(ups, r.PoolUpSeconds), append(firsts, r.FirstLeaseSeconds), append(p50s, r.ResetP50MS), append(p99s, r.ResetP99MS)
	}
	res.PoolUpSeconds, res.FirstLeaseSeconds, res.ResetP50MS, res.ResetP99MS = stats.Median(ups), stats.Median(firsts), stats.Median(p50s), stats.Median(p99s)
	res.FromSQLSeconds = res.PoolUpSeconds
	if built {
		res.FromSQLSeconds += buildWall
	} else {
		res.FromSQLSeconds += m.BuildSeconds
	}

	// 4. The baseline, in the same run: one copy by mariadb-dump | mariadb.
	if opt.Baseline {
		b := store.Binary()
		say("timing the baseline: %s | %s, one copy", b.Client("mariadb-dump"), b.Client("mariadb"))
		d, err := DumpLoadOnce(ctx, store, m)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		res.DumpLoadSeconds = d.Seconds()
		res.DumpLoad200Proj = d.Seconds() * float64(opt.Slots)
		res.SpeedupVsDumpLd = res.DumpLoad200Proj / res.PoolUpSeconds
	}
	return res, nil
}

func countRows(ctx context.Context, l *api.Lease) (int64, error) {
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var table string
	if err := db.QueryRowContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE() ORDER BY TABLE_NAME LIMIT 1").Scan(&table); err != nil {
		return 0, fmt.Errorf("query leased slot: %w", err)
	}
	var n int64
	err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+strings.ReplaceAll(table, "`", "``")+"`").Scan(&n)
	return n, err
}

// WaitReady polls until every slot of a pool is ready again.
func WaitReady(ctx context.Context, c *client.Client, name string, size int) error {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		ps, err := c.Pool(ctx, name)
		if err != nil {
			return err
		}
		if ps.States[string(pool.Ready)] == size {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("pool %s: slots did not all become ready again within 10 minutes", name)
}

// SlotMemory reads the resident memory (RSS, mean and max) and the
// proportional set size (PSS, mean) of every slot's server from /proc. RSS
// counts the server's code in every slot; PSS divides what the slots share
// among them, so its sum is what the pool takes.
func SlotMemory(ctx context.Context, c *client.Client, name string) (mean, maxMB, pssMean float64) {
	ps, err := c.Pool(ctx, name)
	if err != nil {
		return 0, 0, 0
	}
	var sum, pss float64
	n := 0
	for _, s := range ps.Slots {
		if s.PID == 0 {
			continue
		}
		kb := procRSSKB(s.PID)
		if kb == 0 {
			continue
		}
		mb := float64(kb) / 1024
		sum += mb
		pss += float64(procPSSKB(s.PID)) / 1024
		n++
		if mb > maxMB {
			maxMB = mb
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	return sum / float64(n), maxMB, pss / float64(n)
}

// procPSSKB is the proportional set size of pid in kB (smaps_rollup), or 0.
func procPSSKB(pid int) int64 { return procFieldKB(pid, "smaps_rollup", "Pss:") }

// procRSSKB is the resident set size of pid in kB, or 0.
func procRSSKB(pid int) int64 { return procFieldKB(pid, "status", "VmRSS:") }

// procFieldKB reads the kB figure of the line starting with key in
// /proc/PID/file, or 0.
func procFieldKB(pid int, file, key string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// demoRun is one pool-up of the demo (PoolCycle). The first run also fills
// the lease, query and memory figures of res.
func demoRun(ctx context.Context, c *client.Client, name string, opt DemoOptions, res *DemoResult, first bool) (*PoolRun, error) {
	var leased func([]*api.Lease, []float64) error
	if first {
		leased = func(leases []*api.Lease, waits []float64) error {
			res.LeaseP50MS, res.LeaseP99MS = stats.Quantile(waits, 0.5), stats.Quantile(waits, 0.99)
			tq := time.Now()
			n, err := countRows(ctx, leases[0])
			if err != nil {
				return err
			}
			res.QueryMS = float64(time.Since(tq).Microseconds()) / 1000
			res.RowsInFirstTable = n
			res.RSSMeanMB, res.RSSMaxMB, res.PSSMeanMB = SlotMemory(ctx, c, name)
			res.StartCPUMS = SlotCPU(ctx, c, name)
			res.IdleCPUMSPerSec, res.SlotAgeSec = SlotIdle(ctx, c, name, 5*time.Second)
			return nil
		}
	}
	return PoolCycle(ctx, c, name, res.Servers, res.DBsPerSlot, "demo", leased)
}

// Settle waits until btrfs has freed the space of the subvolumes a pool
// removed (its cleaner does that in the background), so the next pool-up's
// free-space check sees it. Other backends free at once.
func Settle(ctx context.Context, store *template.Builder) {
	if store.Catalog().Backend().Name() != "btrfs" {
		return
	}
	_ = exec.CommandContext(ctx, "btrfs", "subvolume", "sync", store.Catalog().Root().Data()).Run()
}

// BuildDemo builds (or finds) the demo schema at scale as template name in
// store, for the server's flavour, from SQL written to the root's tmp
// directory and removed after the build; workers load it.
func BuildDemo(ctx context.Context, store *template.Builder, name string, scale float64, workers int) (*catalog.Meta, error) {
	sqlPath := filepath.Join(store.Catalog().Root().Path, "tmp", fmt.Sprintf("%s-%g.sql", name, scale))
	if err := WriteSQL(sqlPath, demo.Options{Scale: scale, MySQL: !store.Binary().Flavor.SequenceEngine()}); err != nil {
		return nil, err
	}
	defer os.Remove(sqlPath)
	m, _, err := store.Build(ctx, template.BuildOptions{Name: name, FromSQL: sqlPath, Profile: mariadb.DefaultProfile(), Workers: workers})
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", name, err)
	}
	return m, nil
}

// WriteSQL writes the demo schema generator's SQL for opt to path, whole
// or not at all.
func WriteSQL(path string, opt demo.Options) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".demo-*.sql")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := demo.Write(f, opt); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ServeInProcess serves store's root through a daemon in this process, on
// the root's socket (so leases go through the API as a test runner's
// would), and returns a client of it and the function that stops it and
// waits for it to end.
func ServeInProcess(ctx context.Context, store *template.Builder) (*client.Client, func(), error) {
	root := store.Catalog().Root()
	ln, err := server.Listen(root)
	if err != nil {
		return nil, nil, err
	}
	srv, err := server.New(ctx, root, store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(sctx, ln, nil) }()
	return client.New(server.SocketPath(root)), func() { cancel(); wg.Wait() }, nil
}
