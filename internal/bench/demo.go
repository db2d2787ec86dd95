// Package bench measures ways of getting pristine database copies on the
// machine it runs on, always beside a baseline run in the same invocation.
package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/template"
)

// DemoOptions shapes the main job: build the demo template, bring up a
// pool, lease, query, release, and compare with dump|load.
type DemoOptions struct {
	Slots    int     // pool size (default 200)
	Scale    float64 // demo data scale (1 = ~110 MB)
	Baseline bool    // also time mariadb-dump | mariadb
	Log      io.Writer
}

// DemoResult holds every figure the demo measured.
type DemoResult struct {
	Backend          string  `json:"backend"`
	Server           string  `json:"server"`
	Slots            int     `json:"slots"`
	TemplateBytes    int64   `json:"template_bytes"`
	TemplateSeconds  float64 `json:"template_build_seconds"`
	TemplateBuilt    bool    `json:"template_built"`
	PoolUpSeconds    float64 `json:"pool_up_seconds"`
	FromSQLSeconds   float64 `json:"from_sql_seconds"`
	LeaseP50MS       float64 `json:"lease_p50_ms"`
	LeaseP99MS       float64 `json:"lease_p99_ms"`
	QueryMS          float64 `json:"first_query_ms"`
	ResetP50MS       float64 `json:"reset_p50_ms"`
	ResetP99MS       float64 `json:"reset_p99_ms"`
	RSSMeanMB        float64 `json:"rss_mean_mb"`
	RSSMaxMB         float64 `json:"rss_max_mb"`
	DumpLoadSeconds  float64 `json:"dumpload_one_copy_seconds,omitempty"`
	DumpLoad200Proj  float64 `json:"dumpload_projected_seconds,omitempty"`
	SpeedupVsDumpLd  float64 `json:"speedup_vs_dumpload,omitempty"`
	RowsInFirstTable int64   `json:"rows_checked"`
}

// Demo runs the main job against store, serving the pool through an
// in-process daemon on the root's socket so leases go through the API as a
// test runner's would.
func Demo(ctx context.Context, store *template.Store, opt DemoOptions) (*DemoResult, error) {
	if opt.Slots <= 0 {
		opt.Slots = 200
	}
	if opt.Scale <= 0 {
		opt.Scale = 1
	}
	say := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "pristine demo: "+format+"\n", args...)
		}
	}
	res := &DemoResult{Backend: store.Backend.Name(), Server: store.Bin.Version, Slots: opt.Slots}

	// 1. The demo SQL, written by the project, then a template from it.
	sqlPath := filepath.Join(store.Root.Path, "tmp", "demo.sql")
	if err := writeDemoSQL(sqlPath, opt.Scale); err != nil {
		return nil, err
	}
	say("building template demo from %s", sqlPath)
	t0 := time.Now()
	m, built, err := store.Build(ctx, template.BuildOptions{Name: "demo", FromSQL: sqlPath, Profile: profileFor(store), Workers: 4})
	if err != nil {
		return nil, err
	}
	buildWall := time.Since(t0).Seconds()
	res.TemplateBytes, res.TemplateSeconds, res.TemplateBuilt = m.Bytes, m.BuildSeconds, built

	// 2. An in-process daemon, and a pool through it.
	ln, err := server.Listen(store.Root)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(ctx, store.Root, store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		ln.Close()
		return nil, err
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(sctx, ln, nil) }()
	defer func() { stop(); wg.Wait() }()
	c := client.New(server.SocketPath(store.Root))

	say("bringing up %d slots", opt.Slots)
	t1 := time.Now()
	st, err := c.PoolUp(ctx, server.PoolRequest{Template: m.Name, Size: opt.Slots}, nil)
	if err != nil {
		return nil, err
	}
	res.PoolUpSeconds = time.Since(t1).Seconds()
	res.FromSQLSeconds = res.PoolUpSeconds
	if built {
		res.FromSQLSeconds += buildWall
	} else {
		res.FromSQLSeconds += m.BuildSeconds
	}
	say("%d slots ready in %.2fs", st.Size, res.PoolUpSeconds)

	// 3. Lease every slot through the API, query each, release them all.
	leases := make([]*api.Lease, 0, opt.Slots)
	waits := make([]float64, 0, opt.Slots)
	for i := 0; i < opt.Slots; i++ {
		t := time.Now()
		l, err := c.Lease(ctx, server.LeaseRequest{Template: m.Name, Holder: "demo"})
		if err != nil {
			return nil, err
		}
		waits = append(waits, float64(time.Since(t).Microseconds())/1000)
		leases = append(leases, l)
	}
	res.LeaseP50MS, res.LeaseP99MS = quantile(waits, 0.5), quantile(waits, 0.99)
	tq := time.Now()
	n, err := countRows(ctx, leases[0])
	if err != nil {
		return nil, err
	}
	res.QueryMS = float64(time.Since(tq).Microseconds()) / 1000
	res.RowsInFirstTable = n
	res.RSSMeanMB, res.RSSMaxMB = slotRSS(ctx, c, m.Name)
	say("leased %d slots (p99 %.2f ms), first slot answered with %d rows", len(leases), res.LeaseP99MS, n)
	for _, l := range leases {
		if _, err := c.Release(ctx, l.ID, false); err != nil {
			return nil, err
		}
	}
	if err := waitReady(ctx, c, m.Name, opt.Slots); err != nil {
		return nil, err
	}
	ps, err := c.Pool(ctx, m.Name)
	if err != nil {
		return nil, err
	}
	res.ResetP50MS, res.ResetP99MS = ps.ResetP50MS, ps.ResetP99MS
	say("every slot reset to pristine (reset p50 %.0f ms, p99 %.0f ms)", res.ResetP50MS, res.ResetP99MS)
	if _, err := c.PoolDown(ctx, m.Name); err != nil {
		return nil, err
	}

	// 4. The baseline, in the same run: one copy by mariadb-dump | mariadb.
	if opt.Baseline {
		say("timing the baseline: mariadb-dump | mariadb, one copy")
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

func writeDemoSQL(path string, scale float64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	if err := demo.Write(f, demo.Options{Scale: scale}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
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

// waitReady polls until every slot of a pool is ready again.
func waitReady(ctx context.Context, c *client.Client, name string, size int) error {
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

// slotRSS reads the resident memory of every slot's server from /proc.
func slotRSS(ctx context.Context, c *client.Client, name string) (mean, maxMB float64) {
	ps, err := c.Pool(ctx, name)
	if err != nil {
		return 0, 0
	}
	var sum float64
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
		n++
		if mb > maxMB {
			maxMB = mb
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), maxMB
}

func procRSSKB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(q * float64(len(s)))
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}
