package bench

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver the leases' DSNs are for

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/stats"
)

// PertestOptions shape the per-test cost benchmark: Tests tests, one after
// another, each with a database of its own, against the same tests on one
// shared database, in the same run.
type PertestOptions struct {
	Tests int // tests per side (200)
	Size  int // pool size, when no pool of the benchmark's template is up
	// Write makes each test insert a row (and release dirty: its database
	// is reset); otherwise it reads and releases unchanged.
	Write bool
	// Work is how long each test works after its query (a sleep), on
	// both sides: a test longer than a lease's turnaround finds its next
	// database ready.
	Work time.Duration
	// Prefetch takes the next test's lease and connection while a test
	// runs and releases in the background (client.PrefetchDB).
	Prefetch bool
	// Set makes each test run a SET of its session first, on both sides,
	// as most drivers and frameworks do when they connect (autocommit,
	// sql_mode): the server's count of SET statements moves, so the
	// unchanged check reads the global variables again.
	Set bool
}

// PertestResult is what the benchmark measured, in milliseconds on the
// test's thread.
type PertestResult struct {
	Tests    int     `json:"tests"`
	PoolSize int     `json:"pool_size"`
	Write    bool    `json:"write"`
	WorkMS   float64 `json:"work_ms"`
	Prefetch bool    `json:"prefetch"`
	Set      bool    `json:"set"`
	// Own side, medians: the lease, the connection (open and ping), the
	// release, and the three together (the test's overhead).
	LeaseP50MS    float64 `json:"lease_p50_ms"`
	ConnectP50MS  float64 `json:"connect_p50_ms"`
	ReleaseP50MS  float64 `json:"release_p50_ms"`
	OverheadP50MS float64 `json:"overhead_p50_ms"`
	OverheadP90MS float64 `json:"overhead_p90_ms"`
	// The whole test (overhead and the test's queries), median, on each
	// side, and own over shared.
	OwnTestP50MS    float64 `json:"own_test_p50_ms"`
	SharedTestP50MS float64 `json:"shared_test_p50_ms"`
	Ratio           float64 `json:"ratio"`
	// Whole runs, in seconds, and own over shared.
	OwnSeconds    float64 `json:"own_seconds"`
	SharedSeconds float64 `json:"shared_seconds"`
	LoadBefore    string  `json:"load_before"`
	LoadAfter     string  `json:"load_after"`
}

// pertestTemplate is the benchmark's template: one table of 100 rows.
const pertestTemplate = "pertest"

const pertestSchema = `CREATE TABLE item (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40) NOT NULL, KEY ix_name (name));
INSERT INTO item (name) WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100) SELECT CONCAT('item ', n) FROM s;`

// Pertest runs the per-test cost benchmark through the daemon c.
func Pertest(ctx context.Context, c *client.Client, opt PertestOptions) (*PertestResult, error) {
	res := &PertestResult{Tests: opt.Tests, Write: opt.Write, WorkMS: ms(opt.Work), Prefetch: opt.Prefetch, Set: opt.Set, LoadBefore: stats.LoadAverage()}
	a, err := c.EnsureTemplate(ctx, api.TemplateRequest{Name: pertestTemplate, Key: fmt.Sprintf("pertest-v1 %x", sha256.Sum256([]byte(pertestSchema))),
		RunsCode: true, AllowStale: true}, func(ctx context.Context, conn *api.TemplateAnswer) error {
		db, err := sql.Open("mysql", conn.DSN+"?multiStatements=true")
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, pertestSchema)
		return err
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("pertest template: %w", err)
	}
	if err := c.EnsurePool(ctx, pertestTemplate, a.Hash, opt.Size); err != nil {
		return nil, fmt.Errorf("pertest pool: %w", err)
	}
	if st, err := c.Pool(ctx, pertestTemplate); err == nil {
		res.PoolSize = st.Size
	}
	req := api.LeaseRequest{Template: pertestTemplate, Holder: "pristine-bench pertest", Wait: 60}
	shared, err := sharedSide(ctx, c, req, opt)
	if err != nil {
		return nil, err
	}
	own, err := ownSide(ctx, c, req, opt)
	if err != nil {
		return nil, err
	}
	res.LeaseP50MS, res.ConnectP50MS, res.ReleaseP50MS = stats.Median(own.lease), stats.Median(own.connect), stats.Median(own.release)
	res.OverheadP50MS, res.OverheadP90MS = stats.Median(own.overhead), stats.Quantile(own.overhead, 0.9)
	res.OwnTestP50MS, res.SharedTestP50MS = stats.Median(own.test), stats.Median(shared.test)
	if res.SharedTestP50MS > 0 {
		res.Ratio = res.OwnTestP50MS / res.SharedTestP50MS
	}
	res.OwnSeconds, res.SharedSeconds = own.seconds, shared.seconds
	res.LoadAfter = stats.LoadAverage()
	return res, nil
}

// pertestTimes are one side's times, in milliseconds per test.
type pertestTimes struct {
	lease, connect, release, overhead, test []float64
	seconds                                 float64
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pertestWork is a test's own queries (after a SET of its session, with
// opt.Set), and its work.
func pertestWork(ctx context.Context, db *sql.DB, opt PertestOptions) error {
	defer time.Sleep(opt.Work)
	if opt.Set {
		if _, err := db.ExecContext(ctx, "SET SESSION autocommit = 1"); err != nil {
			return err
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM item WHERE name LIKE 'item 1%'").Scan(&n); err != nil {
		return err
	}
	if opt.Write {
		if _, err := db.ExecContext(ctx, "INSERT INTO item (name) VALUES ('written by a test')"); err != nil {
			return err
		}
	}
	return nil
}

// sharedSide runs the tests on one database leased for them all: a
// test's cost is its queries alone.
func sharedSide(ctx context.Context, c *client.Client, req api.LeaseRequest, opt PertestOptions) (*pertestTimes, error) {
	l, err := c.LeaseWait(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("pertest shared database: %w", err)
	}
	defer c.Release(context.WithoutCancel(ctx), l.ID, false)
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return nil, err
	}
	t := &pertestTimes{}
	begin := time.Now()
	for range opt.Tests {
		start := time.Now()
		if err := pertestWork(ctx, db, opt); err != nil {
			return nil, fmt.Errorf("pertest shared test: %w", err)
		}
		t.test = append(t.test, ms(time.Since(start)))
	}
	t.seconds = time.Since(begin).Seconds()
	return t, nil
}

// ownSide runs the tests each on a database of its own, as a client does:
// lease, open and ping, the queries, close, release. With Prefetch, the
// lease and its connection are taken ahead (client.PrefetchDB) and the
// release runs in the background, as the clients' test integrations do.
func ownSide(ctx context.Context, c *client.Client, req api.LeaseRequest, opt PertestOptions) (*pertestTimes, error) {
	lease := func(ctx context.Context) (*api.Lease, *sql.DB, error) {
		l, err := c.LeaseWait(ctx, req)
		return l, nil, err // connected below
	}
	release := func(ctx context.Context, id string) error {
		_, err := c.Release(ctx, id, !opt.Write)
		return err
	}
	if opt.Prefetch {
		p := c.PrefetchDB(req)
		defer p.Close(context.WithoutCancel(ctx))
		p.Warm()
		lease = p.LeaseDB
		release = func(_ context.Context, id string) error { p.Release(id, !opt.Write); return nil }
	}
	t := &pertestTimes{}
	begin := time.Now()
	for range opt.Tests {
		start := time.Now()
		l, db, err := lease(ctx)
		if err != nil {
			return nil, fmt.Errorf("pertest lease: %w", err)
		}
		leased := time.Now()
		if db == nil {
			if db, err = sql.Open("mysql", l.DSN); err == nil {
				err = db.PingContext(ctx)
			}
			if err != nil {
				return nil, fmt.Errorf("pertest connect: %w", err)
			}
		}
		connected := time.Now()
		if err := pertestWork(ctx, db, opt); err != nil {
			return nil, fmt.Errorf("pertest own test: %w", err)
		}
		worked := time.Now()
		db.Close()
		if err := release(ctx, l.ID); err != nil {
			return nil, fmt.Errorf("pertest release: %w", err)
		}
		end := time.Now()
		t.lease = append(t.lease, ms(leased.Sub(start)))
		t.connect = append(t.connect, ms(connected.Sub(leased)))
		t.release = append(t.release, ms(end.Sub(worked)))
		t.overhead = append(t.overhead, ms(connected.Sub(start)+end.Sub(worked)))
		t.test = append(t.test, ms(end.Sub(start)))
	}
	t.seconds = time.Since(begin).Seconds()
	return t, nil
}
