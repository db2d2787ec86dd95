// Package compressbench measures what storage compression costs and
// saves (`pristine-bench bench --compression`): for each variant (no
// compression, a zstd btrfs scratch, zstd with InnoDB page compression)
// it makes a RAM-backed scratch filesystem of its own, builds the demo
// template at a scale, brings up a pool, writes once on every slot, and
// measures the bytes the template and the slots hold and take (from the
// filesystem's extents, package diskuse, and the image's RAM), the build
// time, the pool-up time, the reset p50 and a soak's copies per second,
// all in one run, so the variants are compared under the same load.
package compressbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql" // the slots' driver

	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/scratch"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/template"
	"golang.org/x/sys/unix"
)

// Variant is one storage setting.
type Variant struct {
	Name     string `json:"name"`
	Compress string `json:"compress,omitempty"` // scratch up --compress
	InnoDB   bool   `json:"innodb_compression,omitempty"`
}

// Variants are the named variants of --compress-variants.
var Variants = map[string]Variant{
	"plain":       {Name: "plain"},
	"zstd":        {Name: "zstd", Compress: "zstd:3"},
	"zstd+innodb": {Name: "zstd+innodb", Compress: "zstd:3", InnoDB: true},
	"innodb":      {Name: "innodb", InnoDB: true},
}

// Options shape a run.
type Options struct {
	Variants    []Variant
	Scale       float64       // demo scale (10 is about 1.25 GB)
	Slots       int           // pool size, each slot written once
	SoakClients int           // concurrent lease -> write -> release loops
	SoakTime    time.Duration // how long the soak runs
	ScratchSize int64         // each variant's scratch filesystem
	Log         io.Writer
}

// Result is one variant's figures. Bytes are logical (what the files
// hold) and physical (what they take on the filesystem, shared extents
// once); RAM is what the scratch image takes in /dev/shm.
type Result struct {
	Variant          Variant `json:"variant"`
	BuildSeconds     float64 `json:"build_seconds"`
	TemplateLogical  int64   `json:"template_logical"`
	TemplatePhysical int64   `json:"template_physical"`
	SlotsPhysical    int64   `json:"slots_physical"` // what the written slots add to the template
	RAM              int64   `json:"ram"`            // the image's allocated bytes after the writes
	FirstSeconds     float64 `json:"first_seconds"`  // pool up until its first slot answered
	ReadySeconds     float64 `json:"ready_seconds"`  // pool up until every slot answered
	ResetP50MS       float64 `json:"reset_p50_ms"`
	SoakCopies       int64   `json:"soak_copies"`
	SoakPerSecond    float64 `json:"soak_copies_per_second"`
}

// Report is a run.
type Report struct {
	Host       stats.Host `json:"host"`
	Server     string     `json:"server"`
	Scale      float64    `json:"scale"`
	Slots      int        `json:"slots"`
	Clients    int        `json:"soak_clients"`
	SoakSecs   float64    `json:"soak_seconds"`
	LoadBefore string     `json:"load_before"`
	LoadAfter  string     `json:"load_after"`
	Results    []Result   `json:"results"`
}

// Run measures every variant in turn. It needs root (scratch up).
func Run(ctx context.Context, opt Options) (*Report, error) {
	if opt.Slots < 1 || opt.SoakClients < 1 || opt.Scale <= 0 {
		return nil, errors.New("bench --compression: slots, soak clients and scale must be positive")
	}
	rep := &Report{Host: stats.ReadHost(), Scale: opt.Scale, Slots: opt.Slots, Clients: opt.SoakClients,
		SoakSecs: opt.SoakTime.Seconds(), LoadBefore: stats.LoadAverage()}
	for _, v := range opt.Variants {
		r, server, err := runVariant(ctx, opt, v)
		if err != nil {
			return rep, fmt.Errorf("bench --compression %s: %w", v.Name, err)
		}
		rep.Server = server
		rep.Results = append(rep.Results, *r)
	}
	rep.LoadAfter = stats.LoadAverage()
	return rep, nil
}

func (o Options) say(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "bench --compression: "+format+"\n", args...)
	}
}

// runVariant measures one variant on a root and scratch filesystem of its
// own, removed at the end.
func runVariant(ctx context.Context, opt Options, v Variant) (_ *Result, server string, err error) {
	dir, err := os.MkdirTemp("", "pristine-compressbench-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // the slots' ids search it
		return nil, "", err
	}
	root, err := rootdir.Open(filepath.Join(dir, "root"))
	if err != nil {
		return nil, "", err
	}
	if _, err := scratch.Up(ctx, root, scratch.Options{Size: opt.ScratchSize, Compress: v.Compress}); err != nil {
		return nil, "", err
	}
	defer func() {
		if _, derr := scratch.Down(context.Background(), root); derr != nil && err == nil {
			err = derr
		}
	}()
	st, err := template.Open(ctx, root, "auto")
	if err != nil {
		return nil, "", err
	}
	server = st.Binary().Version
	r := &Result{Variant: v}
	bopt, err := buildOptions(st, root, opt.Scale, v)
	if err != nil {
		return nil, server, err
	}
	opt.say("%s: building the demo at scale %g", v.Name, opt.Scale)
	m, _, err := st.Build(ctx, bopt)
	if err != nil {
		return nil, server, err
	}
	r.BuildSeconds = m.BuildSeconds
	opt.say("%s: built in %.1fs; bringing up %d slots", v.Name, r.BuildSeconds, opt.Slots)
	start := time.Now()
	var first sync.Once
	firstSlot := func(_, _ int) {
		first.Do(func() { r.FirstSeconds = time.Since(start).Seconds() })
	}
	p, err := pool.Up(ctx, st.Catalog(), st.Binary(), m, pool.Options{Size: opt.Slots, Profile: bopt.Profile, Progress: firstSlot})
	if err != nil {
		return nil, server, err
	}
	defer p.Down(context.Background())
	r.ReadySeconds = time.Since(start).Seconds()
	table := demo.Tables(demo.Options{Scale: opt.Scale})[0].Name
	if err := writeEverySlot(ctx, p, opt.Slots, table); err != nil {
		return nil, server, err
	}
	syncfs(root.Data())
	d := p.DiskUse()
	if d.Error != "" {
		return nil, server, errors.New(d.Error)
	}
	r.TemplateLogical, r.TemplatePhysical, r.SlotsPhysical = d.TemplateLogical, d.TemplatePhysical, d.SlotsPhysical
	if info, err := scratch.Status(root); err == nil {
		r.RAM = info.Memory
	}
	opt.say("%s: template %d / %d bytes (logical / physical), slots %d; soak for %s", v.Name, r.TemplateLogical, r.TemplatePhysical, r.SlotsPhysical, opt.SoakTime)
	if r.SoakCopies, err = soak(ctx, p, opt.SoakClients, opt.SoakTime, table); err != nil {
		return nil, server, err
	}
	r.SoakPerSecond = float64(r.SoakCopies) / opt.SoakTime.Seconds()
	r.ResetP50MS = p.Status(false).ResetP50MS
	return r, server, nil
}

// buildOptions are the demo template's build options for v.
func buildOptions(st *template.Builder, root *rootdir.Root, scale float64, v Variant) (template.BuildOptions, error) {
	sqlPath := filepath.Join(root.Path, "demo.sql")
	f, err := os.Create(sqlPath)
	if err != nil {
		return template.BuildOptions{}, err
	}
	err = demo.Write(f, demo.Options{Scale: scale})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	opt := template.BuildOptions{Name: "demo", FromSQL: sqlPath, Database: "bench", Profile: mariadb.DefaultProfile(), Workers: 4}
	if err != nil || !v.InnoDB {
		return opt, err
	}
	pc, err := st.Binary().PageCompressionOptions()
	if err != nil {
		return opt, err
	}
	opt.Profile.Options, err = mariadb.MergeOptions(opt.Profile.Options, pc)
	return opt, err
}

// writeEverySlot leases every slot and writes on it (a copy of 2,000 rows
// of the first table), keeping the leases. What the slots' servers wrote
// to their files by the time of the measure is what counts (a lease's
// account may not flush tables).
func writeEverySlot(ctx context.Context, p *pool.Pool, n int, table string) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		l, err := p.Lease(ctx, pool.LeaseOptions{Holder: "bench"})
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- write(ctx, l, table)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// write makes one test's write on a lease: a table of 2,000 rows copied
// from table.
func write(ctx context.Context, l *pool.Lease, table string) error {
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	q := "CREATE TABLE bench_write AS SELECT * FROM `" + table + "` LIMIT 2000"
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return nil
}

// soak runs clients loops of lease -> write -> release (dirty) for d,
// after releasing the leases writeEverySlot kept, and counts the copies.
func soak(ctx context.Context, p *pool.Pool, clients int, d time.Duration, table string) (int64, error) {
	for _, l := range p.Leases() {
		if _, err := p.Release(ctx, l.ID, pool.Dirty); err != nil {
			return 0, err
		}
	}
	var copies atomic.Int64
	var first atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				lctx, cancel := context.WithDeadline(ctx, deadline.Add(30*time.Second))
				l, err := p.Lease(lctx, pool.LeaseOptions{Holder: "bench-soak"})
				cancel()
				if err == nil {
					err = write(ctx, l, table)
					if _, rerr := p.Release(ctx, l.ID, pool.Dirty); err == nil {
						err = rerr
					}
				}
				if err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
				copies.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return copies.Load(), fmt.Errorf("soak: %w", err)
	}
	return copies.Load(), nil
}

// syncfs writes back the filesystem holding dir before it is measured.
func syncfs(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = unix.Syncfs(int(f.Fd()))
		f.Close()
	}
}
