// Package capturebench measures capturing a live server into a template
// against the usual tools, on the same source and machine: mariadb-dump |
// mariadb, mydumper | myloader, mariadb-backup | mbstream + prepare, and
// pristine's logical (LOAD DATA and INSERT) and physical capture
// (`pristine-bench bench-capture`). Pristine's times are whole template builds:
// capture, server start, lease account, clean slow shutdown.
package capturebench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/template"
)

// Options tune a run.
type Options struct {
	// Dir holds the temporary root (default /dev/shm); it is removed at the end.
	Dir string
	// FKScale sizes the foreign-key dataset (1 = about 5.2 million rows).
	FKScale float64
	// DemoScale sizes the demo template (1 = about 110 MB).
	DemoScale float64
	// Runs is the number of timed runs of each method; the median counts.
	Runs int
	// Workers are the parallel connections of pristine, mydumper and myloader.
	Workers int
	// Log receives progress lines; nil means quiet.
	Log io.Writer
	// Only, when set, runs just the methods whose names contain it.
	Only string
	// Datasets lists "demo" and/or "fk" (default both).
	Datasets []string
}

// Result is one method's time on one dataset.
type Result struct {
	Dataset string  `json:"dataset"`
	Method  string  `json:"method"`
	Seconds float64 `json:"seconds"`
	// Baseline names the method Ratio compares against; Ratio is its time
	// divided by this one's (above 1: this one is faster).
	Baseline string  `json:"baseline,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	Note     string  `json:"note,omitempty"`
}

// Report is a whole run.
type Report struct {
	Load    string   `json:"load_average"`
	Cores   int      `json:"cores"`
	Results []Result `json:"results"`
}

// The method names in the report.
const (
	mDump      = "mariadb-dump | mariadb"
	mMydumper  = "mydumper | myloader"
	mBackup    = "mariadb-backup | mbstream + prepare"
	mLogical   = "pristine logical (LOAD DATA)"
	mInsert    = "pristine logical (INSERT)"
	mPhysical  = "pristine physical"
	mStream    = "pristine physical (xbstream through pristine's reader)"
	sourceName = "capture-src"
)

type bench struct {
	opt   Options
	store *template.Builder
	empty *catalog.Meta
}

func (b *bench) log(format string, args ...any) {
	if b.opt.Log != nil {
		fmt.Fprintf(b.opt.Log, "bench-capture %s: "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

// Run builds the datasets in a temporary root, starts a source server on
// each and times every method against it.
func Run(ctx context.Context, opt Options) (*Report, error) {
	if opt.Dir == "" {
		opt.Dir = "/dev/shm"
	}
	if opt.FKScale == 0 {
		opt.FKScale = 1
	}
	if opt.DemoScale == 0 {
		opt.DemoScale = 1
	}
	opt.Runs = max(opt.Runs, 1)
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	dir, err := os.MkdirTemp(opt.Dir, "pristine-bench-capture-")
	if err != nil {
		return nil, fmt.Errorf("bench-capture: %w", err)
	}
	// The servers' account passes through it to the root inside.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, fmt.Errorf("bench-capture: %w", err)
	}
	defer func() {
		mariadb.KillOrphans(dir)
		os.RemoveAll(dir)
	}()
	root, err := rootdir.Open(filepath.Join(dir, "root"))
	if err != nil {
		return nil, err
	}
	st, err := template.Open(ctx, root, "auto")
	if err != nil {
		return nil, err
	}
	b := &bench{opt: opt, store: st}
	if opt.Log != nil {
		st.Progress = b.log
	}
	b.empty, _, err = st.Build(ctx, template.BuildOptions{Name: "empty", InitCmd: "true", Profile: mariadb.DefaultProfile(), InitOutput: io.Discard})
	if err != nil {
		return nil, err
	}
	rep := &Report{Cores: numCPU()}
	if len(opt.Datasets) == 0 {
		opt.Datasets = []string{"demo", "fk"}
	}
	for _, ds := range []struct {
		key, name string
		write     func(io.Writer) error
	}{
		{"demo", fmt.Sprintf("demo (scale %g)", opt.DemoScale), func(w io.Writer) error { return demo.Write(w, demo.Options{Scale: opt.DemoScale}) }},
		{"fk", fmt.Sprintf("foreign keys (%.1fM rows)", 5.2*opt.FKScale), func(w io.Writer) error { return writeFKSQL(w, opt.FKScale) }},
	} {
		if !slices.Contains(opt.Datasets, ds.key) {
			continue
		}
		rs, err := b.dataset(ctx, dir, ds.name, ds.write)
		if err != nil {
			return nil, fmt.Errorf("bench-capture %s: %w", ds.name, err)
		}
		rep.Results = append(rep.Results, rs...)
	}
	if rep.Load = stats.LoadAverage(); rep.Load == "" {
		rep.Load = "unknown"
	}
	return rep, nil
}

// dataset builds one source template, starts it and times every method.
func (b *bench) dataset(ctx context.Context, dir, name string, write func(io.Writer) error) ([]Result, error) {
	sqlPath := filepath.Join(dir, "source.sql")
	f, err := os.Create(sqlPath)
	if err != nil {
		return nil, err
	}
	if err := write(f); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	b.log("%s: building the source", name)
	m, _, err := b.store.Build(ctx, template.BuildOptions{Name: "source", Database: "app", FromSQL: sqlPath, Profile: mariadb.DefaultProfile(), Workers: b.opt.Workers, Rebuild: true})
	if err != nil {
		return nil, err
	}
	src, err := b.store.Start(ctx, m, sourceName)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	defer b.store.Catalog().Remove(m, nil)
	sock := src.Inst.Config.Socket()
	url := "mysql://root:" + b.store.Catalog().Admin() + "@localhost/?socket=" + sock
	methods := []struct {
		name string
		run  func() error
	}{
		{mDump, func() error { return b.dumpLoad(ctx, sock) }},
		{mMydumper, func() error { return b.mydumper(ctx, dir, sock) }},
		{mBackup, func() error { return b.backup(ctx, dir, src.Inst) }},
		{mLogical, func() error { return b.capture(ctx, url, template.ServerSource{Method: "logical"}) }},
		{mInsert, func() error { return b.capture(ctx, url, template.ServerSource{Method: "logical", Insert: true}) }},
		{mPhysical, func() error { return b.capture(ctx, url, template.ServerSource{Method: "physical"}) }},
		{mStream, func() error { return b.capture(ctx, url, template.ServerSource{Method: "physical", Stream: true}) }},
	}
	secs := map[string]float64{}
	var out []Result
	for _, me := range methods {
		if b.opt.Only != "" && !strings.Contains(me.name, b.opt.Only) && me.name != mDump && me.name != mBackup {
			continue
		}
		var times []float64
		for i := 0; i < b.opt.Runs; i++ {
			b.log("%s: %s, run %d", name, me.name, i+1)
			start := time.Now()
			if err := me.run(); err != nil {
				return nil, fmt.Errorf("%s: %w", me.name, err)
			}
			times = append(times, time.Since(start).Seconds())
		}
		secs[me.name] = stats.Median(times)
		out = append(out, Result{Dataset: name, Method: me.name, Seconds: secs[me.name]})
	}
	for i := range out {
		base := mDump
		if out[i].Method == mPhysical || out[i].Method == mStream || out[i].Method == mBackup {
			base = mBackup
		}
		if out[i].Method != base {
			out[i].Baseline, out[i].Ratio = base, secs[base]/out[i].Seconds
		}
	}
	return out, nil
}

// target starts a fresh empty server for a baseline to load into.
func (b *bench) target(ctx context.Context) (*template.Running, error) {
	return b.store.Start(ctx, b.empty, "capture-dst")
}

func (b *bench) dumpLoad(ctx context.Context, sock string) error {
	dst, err := b.target(ctx)
	if err != nil {
		return err
	}
	defer dst.Close()
	return pipe(ctx,
		b.admin(exec.CommandContext(ctx, "mariadb-dump", "--no-defaults", "-uroot", "--socket="+sock, "--single-transaction", "--routines", "--triggers", "--events", "--databases", "app")),
		b.admin(exec.CommandContext(ctx, "mariadb", "--no-defaults", "-uroot", "--socket="+dst.Inst.Config.Socket())))
}

func (b *bench) mydumper(ctx context.Context, dir, sock string) error {
	dst, err := b.target(ctx)
	if err != nil {
		return err
	}
	defer dst.Close()
	out := filepath.Join(dir, "mydumper")
	os.RemoveAll(out)
	defer os.RemoveAll(out)
	th := fmt.Sprint(b.opt.Workers)
	if err := run(b.admin(exec.CommandContext(ctx, "mydumper", "--socket", sock, "-u", "root", "-B", "app", "-o", out, "-t", th, "-r", "100000", "-G", "-E", "-R"))); err != nil {
		return err
	}
	return run(b.admin(exec.CommandContext(ctx, "myloader", "--socket", dst.Inst.Config.Socket(), "-u", "root", "-d", out, "-t", th)))
}

func (b *bench) backup(ctx context.Context, dir string, src *mariadb.Instance) error {
	out := filepath.Join(dir, "backup")
	tmp := filepath.Join(dir, "backup-tmp")
	os.RemoveAll(out)
	os.RemoveAll(tmp)
	defer os.RemoveAll(out)
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	err := pipe(ctx,
		b.admin(exec.CommandContext(ctx, "mariadb-backup", "--no-defaults", "--backup", "--stream=xbstream", "--user=root", "--socket="+src.Config.Socket(),
			"--datadir="+src.Config.Datadir, "--target-dir="+tmp, "--parallel=2")),
		exec.CommandContext(ctx, "mbstream", "-x", "-C", out))
	if err != nil {
		return err
	}
	return run(exec.CommandContext(ctx, "mariadb-backup", "--no-defaults", "--prepare", "--target-dir="+out, "--use-memory=256M"))
}

// capture builds a template from the source, the way `template build
// --from-server` does, and removes it.
func (b *bench) capture(ctx context.Context, url string, how template.ServerSource) error {
	how.DSN, how.Databases = url, []string{"app"}
	m, _, err := b.store.Build(ctx, template.BuildOptions{Name: "captured", Profile: mariadb.DefaultProfile(), Workers: b.opt.Workers, Rebuild: true, Server: how})
	if err != nil {
		return err
	}
	return b.store.Catalog().Remove(m, nil)
}

// pipe runs a | b and reports either side's failure with its stderr.
func pipe(ctx context.Context, a, b *exec.Cmd) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	var ea, eb bytes.Buffer
	a.Stdout, a.Stderr = w, &ea
	b.Stdin, b.Stdout, b.Stderr = r, io.Discard, &eb
	if err := b.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("start %s: %w", b.Path, err)
	}
	r.Close()
	errA := a.Run()
	w.Close()
	errB := b.Wait()
	if errA != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(a.Path), errA, lastLine(ea.String()))
	}
	if errB != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(b.Path), errB, lastLine(eb.String()))
	}
	return nil
}

// admin hands a client the root's admin secret in MYSQL_PWD (the
// environment, not argv, which every local user can read).
func (b *bench) admin(c *exec.Cmd) *exec.Cmd {
	c.Env = append(os.Environ(), "MYSQL_PWD="+b.store.Catalog().Admin())
	return c
}

func run(c *exec.Cmd) error {
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(c.Path), err, lastLine(string(out)))
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
