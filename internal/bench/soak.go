package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/stats"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/server"
)

// SoakOptions shape a soak: Clients concurrent test runners doing Cycles
// lease -> check -> write -> release cycles in all.
type SoakOptions struct {
	Template string
	Clients  int
	Cycles   int
	Size     int           // pool size when the soak brings the pool up itself
	Hold     time.Duration // how long each client keeps its lease (a test's work)
	Log      io.Writer
	// Pattern is what each cycle writes: PatternDefault or
	// PatternThreeTables (soakfresh.go).
	Pattern string
	// Unchanged releases every lease as unchanged (mode=unchanged), as
	// the Spring and Node clients do by default: the daemon checks the
	// database, finds the cycle's write and resets it.
	Unchanged bool
	// VerifyEvery verifies one lease in n (Cycles/n of them, at least
	// one) against a reference lease kept untouched (schema and rows,
	// package verify); 0: none. The verification runs after the timed
	// cycles, on leases of the slots they reset: reading every row of a
	// database is the benchmark's own work, which would otherwise count
	// against the pool's throughput (on MySQL it took half the machine's
	// CPU of a soak).
	VerifyEvery int
}

// SoakResult is what a soak measured.
type SoakResult struct {
	Template      string  `json:"template"`
	Clients       int     `json:"clients"`
	Cycles        int64   `json:"cycles"`
	PoolSize      int     `json:"pool_size"`
	HoldMS        float64 `json:"hold_ms"`
	NotPristine   int64   `json:"not_pristine"`
	Errors        int64   `json:"errors"`
	Seconds       float64 `json:"seconds"`
	LeasesPerSec  float64 `json:"leases_per_second"`
	LeaseP50MS    float64 `json:"lease_wait_p50_ms"`
	LeaseP99MS    float64 `json:"lease_wait_p99_ms"`
	LeaseMaxMS    float64 `json:"lease_wait_max_ms"`
	ResetP50MS    float64 `json:"reset_p50_ms"`
	ResetP99MS    float64 `json:"reset_p99_ms"`
	LeftServers   []int   `json:"left_servers"`
	LeftPoolFiles bool    `json:"left_pool_files"`
	FirstError    string  `json:"first_error,omitempty"`
	// Pattern is the write pattern of each cycle.
	Pattern string `json:"pattern"`
	// Unchanged says every lease was released as unchanged.
	Unchanged bool `json:"released_unchanged,omitempty"`
	// FreshPerSec counts pristine leases (canary right, no error) per
	// second.
	FreshPerSec float64 `json:"fresh_per_second"`
	// SteadyPerSec is FreshPerSec over the second half of the cycles
	// (from the end of the first half's last to the end of the last):
	// the rate of the pool's resets, once the databases ready at the
	// start were handed out. Over the whole soak those count as fresh
	// copies no reset made, and a pool of more databases (--dbs-per-slot)
	// starts with more.
	SteadyPerSec float64 `json:"steady_fresh_per_second"`
	// Resets is how many resets the pool did during the soak, by path
	// ("inplace", "full", "full:<reason>").
	Resets map[string]int64 `json:"resets"`
	// CPUPerResetMS is the machine's busy CPU time during the soak (all
	// of it, from /proc/stat: servers, daemon, clients, and whatever else
	// ran) per reset, in milliseconds.
	CPUPerResetMS float64 `json:"cpu_per_reset_ms"`
	// PristineCPUPerResetMS is the CPU time of the daemon and its slot
	// servers alone during the soak (their /proc/PID/stat, children the
	// daemon reaped included) per reset, in milliseconds: without the
	// clients and other work on the machine, and without kernel threads
	// (btrfs' cleaner).
	PristineCPUPerResetMS float64 `json:"pristine_cpu_per_reset_ms"`
	// Verified counts the sampled leases verified against the reference
	// lease; NotVerified those that differed (FirstDiff says how).
	Verified    int64  `json:"verified"`
	NotVerified int64  `json:"not_verified"`
	FirstDiff   string `json:"first_diff,omitempty"`
	// Load is the load average (1, 5, 15 min) before and after.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

// Soak runs the soak through the daemon c serves for root. Each client
// checks a canary table's checksum before writing: a lease that is not
// pristine is counted, never hidden.
func Soak(ctx context.Context, c *client.Client, root *rootdir.Root, opt SoakOptions) (*SoakResult, error) {
	say := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "pristine-bench soak: "+format+"\n", args...)
		}
	}
	if opt.Pattern == "" {
		opt.Pattern = PatternDefault
	}
	if opt.Pattern != PatternDefault && opt.Pattern != PatternThreeTables {
		return nil, fmt.Errorf("soak: unknown write pattern %q: use %s or %s", opt.Pattern, PatternDefault, PatternThreeTables)
	}
	res := &SoakResult{Template: opt.Template, Clients: opt.Clients, HoldMS: float64(opt.Hold.Microseconds()) / 1000, Pattern: opt.Pattern, Unchanged: opt.Unchanged, LoadBefore: stats.LoadAverage()}
	st, err := c.Pool(ctx, opt.Template)
	ours := false
	if err != nil {
		say("bringing up %d slots of %s", opt.Size, opt.Template)
		if st, err = c.PoolUp(ctx, server.PoolRequest{Template: opt.Template, Size: opt.Size, MinReady: opt.Size}, nil); err != nil {
			return nil, err
		}
		ours = true
	}
	res.PoolSize = st.Size
	table, want, err := canary(ctx, c, opt.Template)
	if err != nil {
		return nil, err
	}
	say("canary: CHECKSUM TABLE %s = %d; %d clients x %d cycles", table, want, opt.Clients, opt.Cycles)
	var ref *reference
	if opt.VerifyEvery > 0 {
		if ref, err = newReference(ctx, c, opt.Template); err != nil {
			return nil, err
		}
		defer ref.close(ctx)
	}
	w := &writer{tables: []string{table}}
	if opt.Pattern == PatternThreeTables {
		if w.tables, err = patternTables(ctx, c, opt.Template); err != nil {
			return nil, err
		}
		w.temp = true
	}
	before := map[string]int64{}
	if ps, err := c.Pool(ctx, opt.Template); err == nil {
		before = ps.Stats.ResetPaths
	}
	cpu0, own0 := busyJiffies(), pristineTicks(root.Data())

	var (
		next, bad, errs atomic.Int64
		mu              sync.Mutex
		waits           []float64
		ends            []cycleEnd
		firstErr        string
		wg              sync.WaitGroup
	)
	start := time.Now()
	for i := 0; i < opt.Clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for next.Add(1) <= int64(opt.Cycles) && ctx.Err() == nil {
				wait, pristine, err := cycle(ctx, c, opt, table, want, fmt.Sprintf("soak-%d", i), w)
				mu.Lock()
				ends = append(ends, cycleEnd{at: time.Since(start), fresh: err == nil && pristine})
				if err != nil {
					errs.Add(1)
					if firstErr == "" {
						firstErr = err.Error()
					}
				} else {
					waits = append(waits, wait)
					if !pristine {
						bad.Add(1)
					}
				}
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	cpu, own := busyJiffies()-cpu0, pristineTicks(root.Data())-own0
	res.Cycles = int64(len(waits))
	res.FreshPerSec = float64(res.Cycles-bad.Load()) / res.Seconds
	res.NotPristine, res.Errors, res.FirstError = bad.Load(), errs.Load(), firstErr
	res.LeasesPerSec = float64(res.Cycles) / res.Seconds
	res.SteadyPerSec = steadyRate(ends)
	res.LeaseP50MS, res.LeaseP99MS, res.LeaseMaxMS = stats.Quantile(waits, 0.5), stats.Quantile(waits, 0.99), stats.Quantile(waits, 1)
	if ps, err := c.Pool(ctx, opt.Template); err == nil {
		res.ResetP50MS, res.ResetP99MS = ps.ResetP50MS, ps.ResetP99MS
		res.Resets = pathDelta(before, ps.Stats.ResetPaths)
	}
	res.LoadAfter = stats.LoadAverage()
	if ref != nil {
		n := max(opt.Cycles/opt.VerifyEvery, 1)
		say("verifying %d leases against the reference lease (not timed)", n)
		for i := 0; i < n && ctx.Err() == nil; i++ {
			if err := verifyLease(ctx, c, opt, ref, res); err != nil {
				res.Errors++
				if res.FirstError == "" {
					res.FirstError = err.Error()
				}
			}
		}
	}
	var resets int64
	for _, n := range res.Resets {
		resets += n
	}
	if resets > 0 {
		res.CPUPerResetMS = float64(cpu) * 1000 / clockTicks / float64(resets)
		res.PristineCPUPerResetMS = float64(own) * 1000 / clockTicks / float64(resets)
	}
	say("%d cycles in %.1fs: %.1f leases/s (%.1f/s over the second half), lease wait p99 %.2f ms, %d not pristine, %d errors", res.Cycles, res.Seconds, res.LeasesPerSec, res.SteadyPerSec, res.LeaseP99MS, res.NotPristine, res.Errors)
	say("resets by path %v, %.1f ms of machine CPU (%.1f ms of pristine's daemon and servers) per reset; %d leases verified, %d differed; load %s -> %s", res.Resets, res.CPUPerResetMS, res.PristineCPUPerResetMS, res.Verified, res.NotVerified, res.LoadBefore, res.LoadAfter)
	if ours {
		if _, err := c.PoolDown(ctx, opt.Template); err != nil {
			return res, err
		}
		res.LeftServers = mariadb.Servers(root.Data())
		if ents, err := os.ReadDir(root.Data() + "/pools"); err == nil && len(ents) > 0 {
			res.LeftPoolFiles = true
		}
	}
	return res, ctx.Err()
}

// cycle is one test: lease, check the canary, write, hold, release (dirty,
// or unchanged with opt.Unchanged).
func cycle(ctx context.Context, c *client.Client, opt SoakOptions, table string, want int64, holder string, w *writer) (waitMS float64, pristine bool, err error) {
	t := time.Now()
	l, err := c.Lease(ctx, server.LeaseRequest{Template: opt.Template, Holder: holder, Wait: 120})
	if err != nil {
		return 0, false, err
	}
	waitMS = float64(time.Since(t).Microseconds()) / 1000
	defer func() {
		if _, rerr := c.Release(context.WithoutCancel(ctx), l.ID, opt.Unchanged); rerr != nil && err == nil {
			err = rerr
		}
	}()
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return waitMS, false, err
	}
	defer db.Close()
	got, err := checksum(ctx, db, table)
	if err != nil {
		return waitMS, false, err
	}
	if err := write(ctx, db, w.tables, w.temp); err != nil {
		return waitMS, false, err
	}
	if opt.Hold > 0 {
		time.Sleep(opt.Hold)
	}
	return waitMS, got == want, nil
}

// canary picks the template's smallest non-empty table and its checksum,
// from a lease released unchanged.
func canary(ctx context.Context, c *client.Client, template string) (string, int64, error) {
	l, err := c.Lease(ctx, server.LeaseRequest{Template: template, Holder: "soak-canary", Wait: 120})
	if err != nil {
		return "", 0, err
	}
	defer c.Release(context.WithoutCancel(ctx), l.ID, true)
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return "", 0, err
	}
	defer db.Close()
	var table string
	// The smallest table with rows that no foreign key points at, so a
	// client can delete from it.
	err = db.QueryRowContext(ctx, `SELECT TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA=DATABASE() AND TABLE_TYPE='BASE TABLE' AND TABLE_ROWS > 0
		AND TABLE_NAME NOT IN (SELECT REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA=DATABASE())
		ORDER BY TABLE_ROWS, TABLE_NAME LIMIT 1`).Scan(&table)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, fmt.Errorf("soak: template %s has no table with rows to use as a canary", template)
	}
	if err != nil {
		return "", 0, err
	}
	sum, err := checksum(ctx, db, table)
	return table, sum, err
}

func checksum(ctx context.Context, db *sql.DB, table string) (int64, error) {
	var name string
	var sum sql.NullInt64
	if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+quote.Ident(table)).Scan(&name, &sum); err != nil {
		return 0, fmt.Errorf("checksum %s: %w", table, err)
	}
	return sum.Int64, nil
}

// verifyLease takes a lease (a slot the timed cycles reset), compares it
// with the reference lease and counts the outcome in res; it releases the
// lease unchanged. An error is a lease that could not be read.
func verifyLease(ctx context.Context, c *client.Client, opt SoakOptions, ref *reference, res *SoakResult) error {
	l, err := c.Lease(ctx, server.LeaseRequest{Template: opt.Template, Holder: "soak-verify", Wait: 120})
	if err != nil {
		return err
	}
	defer c.Release(context.WithoutCancel(ctx), l.ID, true)
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	diffs, err := ref.verify(ctx, db, l.Database)
	res.Verified++
	if err != nil {
		diffs = []string{"verify failed: " + err.Error()}
	}
	if len(diffs) > 0 {
		res.NotVerified++
		if res.FirstDiff == "" {
			res.FirstDiff = strings.Join(diffs, "; ")
		}
	}
	return nil
}

// cycleEnd is when a soak's cycle ended, from the soak's start, and
// whether its lease was fresh (pristine, no error).
type cycleEnd struct {
	at    time.Duration
	fresh bool
}

// steadyRate is the fresh leases per second of the second half of ends
// (in the order they ended): those ended after the first half's last, over
// the time from it to the last end. 0 with fewer than 4 cycles.
func steadyRate(ends []cycleEnd) float64 {
	if len(ends) < 4 {
		return 0
	}
	half := len(ends) / 2
	span := (ends[len(ends)-1].at - ends[half-1].at).Seconds()
	if span <= 0 {
		return 0
	}
	n := 0
	for _, e := range ends[half:] {
		if e.fresh {
			n++
		}
	}
	return float64(n) / span
}
