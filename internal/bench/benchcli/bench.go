package benchcli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/cli"

	"github.com/pristinedb/pristine/internal/bench"
	"github.com/pristinedb/pristine/internal/bench/archivebench"
	"github.com/pristinedb/pristine/internal/bench/buildbench"
	"github.com/pristinedb/pristine/internal/bench/capturebench"
	"github.com/pristinedb/pristine/internal/bench/compressbench"
	"github.com/pristinedb/pristine/internal/units"
)

// BenchFlags are the flags of `pristine-bench bench`.
type BenchFlags struct {
	Workloads   string
	Methods     string
	Copies      string
	Backends    string
	DBsPerSlot  string
	Workers     int
	MaxTime     time.Duration
	EatMyData   bool
	Reset       bool
	ResetScale  float64
	Resets      int
	Scale       float64
	ManyTables  int
	Out         string
	Render      string
	Verbose     bool
	Archive     bool
	Capture     bool
	ServiceSize int
	ServiceRuns int
	FirstBuild  bool
	Migrations  int
	BuildRuns   int
	BuildStore  bool
	Compression bool
	Compress    compressFlags
}

// compressFlags are the flags of `bench --compression`.
type compressFlags struct {
	Variants    string
	Slots       int
	SoakClients int
	SoakTime    time.Duration
	ScratchSize string
}

func newBenchCmd(g *cli.Globals) *cobra.Command {
	var f BenchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "every way of getting N pristine copies, side by side: dump|load, myloader, IMPORT TABLESPACE, pristine slots",
		Long: `Builds each workload's template in the root, then makes N copies of it with
every method on the same server binary and filesystem: mariadb-dump | mariadb
into the same server (serial and with --workers), mydumper/myloader, IMPORT
TABLESPACE with secondary indexes kept (import) and dropped then added
(import-noidx), and pristine slots on each copy-on-write backend with 1 and K
databases per slot (thin). A method that would exceed --max-time stops; its
rows are projections from its measured rate and say so. --reset adds the
service section: pool up, lease latency and memory through the daemon, and
single resets of a 100 MB and a ~2 GB template.

--out DIR writes bench.json, bench.md and PNG charts; --render a.json,b.json
prints a page of saved runs (docs/benchmarks.md holds them between markers,
rewritten by pristine-bench front-page --bench-runs). --archive and --capture run
pristine-bench bench-archive and bench-capture instead; --first-build times first
template builds (create + migrate) against a stock mariadbd on tmpfs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Workloads, "workload", "demo,demo10,tables30k", "workloads: demo (51 tables, ~110 MB), demo10 (10x the data), tables30k (30,000 small tables)")
	fl.StringVar(&f.Methods, "methods", strings.Join(bench.AllMethods, ","), "methods to run")
	fl.StringVar(&f.Copies, "copies", "1,10,200", "copy counts")
	fl.StringVar(&f.Backends, "backends", "", "copy-on-write backends for thin slots (default: every one the root supports)")
	fl.StringVar(&f.DBsPerSlot, "dbs-per-slot", "1,10", "databases per slot for thin slots")
	fl.IntVar(&f.Workers, "workers", 4, "parallel workers of dumpload and myloader")
	fl.DurationVar(&f.MaxTime, "max-time", 5*time.Minute, "time budget of one method on one workload")
	fl.BoolVar(&f.EatMyData, "eatmydata", false, "also run dumpload and myloader under eatmydata (LD_PRELOAD)")
	fl.BoolVar(&f.Reset, "reset", false, "add the service section: pool up, lease, memory, single resets of a small and a large template")
	fl.Float64Var(&f.ResetScale, "reset-scale", 18, "demo scale of the large template of --reset (18 is about 2 GB)")
	fl.IntVar(&f.Resets, "resets", 20, "single resets timed per template with --reset")
	fl.IntVar(&f.ServiceSize, "reset-slots", 0, "slots of the --reset pool (default: the largest --copies)")
	fl.IntVar(&f.ServiceRuns, "reset-runs", 3, "pool-ups of the --reset pool; the median is reported")
	fl.Float64Var(&f.Scale, "scale", 1, "multiply every workload's data (for quick runs, e.g. 0.05)")
	fl.IntVar(&f.ManyTables, "many-tables", 30000, "tables of the tables30k workload")
	fl.StringVar(&f.Out, "out", "", "write bench.json, bench.md and the charts to this directory")
	fl.StringVar(&f.Render, "render", "", "print a page of saved bench.json files (comma-separated) with their charts and measure nothing (docs/benchmarks.md holds them between markers: pristine-bench front-page --bench-runs)")
	fl.BoolVar(&f.Verbose, "verbose", false, "show progress on stderr even when it is not a terminal")
	fl.BoolVar(&f.Archive, "archive", false, "run pristine-bench bench-archive (pack/unpack) instead")
	fl.BoolVar(&f.FirstBuild, "first-build", false, "measure first template builds (the demo schema, a DDL-heavy migration set) against a stock mariadbd on tmpfs instead; --scale scales the demo data")
	fl.IntVar(&f.Migrations, "migrations", 300, "models of the --first-build migration set (a CREATE TABLE and three ALTERs each)")
	fl.IntVar(&f.BuildRuns, "build-runs", 3, "timed runs of each --first-build row; the median is reported")
	fl.BoolVar(&f.BuildStore, "build-store", true, "with --first-build: also time builds on the store (--no-ram-build); --build-store=false for big sets, where they take minutes")
	fl.BoolVar(&f.Compression, "compression", false, "measure storage compression instead: each --compress-variants on a RAM-backed btrfs scratch of its own, the demo at --scale (10 is about 1.25 GB): template bytes, --compress-slots slots written once, build time, first slot and slots ready, reset p50, soak copies/s (needs root)")
	fl.StringVar(&f.Compress.Variants, "compress-variants", "plain,zstd,zstd+innodb", "with --compression: plain (none), zstd (scratch up --compress zstd:3), zstd+innodb (and template build --innodb-compression), innodb")
	fl.IntVar(&f.Compress.Slots, "compress-slots", 50, "with --compression: pool size, each slot written once")
	fl.IntVar(&f.Compress.SoakClients, "soak-clients", 8, "with --compression: concurrent lease -> write -> release loops")
	fl.DurationVar(&f.Compress.SoakTime, "soak-time", 20*time.Second, "with --compression: how long the soak runs")
	fl.StringVar(&f.Compress.ScratchSize, "scratch-size", "8G", "with --compression: each variant's scratch filesystem (sparse: RAM is used as data is written)")
	fl.BoolVar(&f.Capture, "capture", false, "run pristine-bench bench-capture (template capture from a live server) instead")
	return cmd
}

func runBench(ctx context.Context, g *cli.Globals, f BenchFlags) error {
	var log io.Writer
	if f.Verbose || g.ErrIsTerminal() {
		log = g.IO.Err
	}
	switch {
	case f.Archive:
		exe, err := cli.PristineExe()
		if err != nil {
			return fmt.Errorf("bench --archive: %w", err)
		}
		rep, err := archivebench.Run(ctx, archivebench.Options{SizeMB: 1024, Runs: 3, Exe: exe, Log: log})
		if err != nil {
			return err
		}
		if g.JSON {
			return g.PrintJSON(rep)
		}
		return archivebench.Markdown(g.IO.Out, rep)
	case f.Capture:
		rep, err := capturebench.Run(ctx, capturebench.Options{Dir: "/dev/shm", FKScale: 1, DemoScale: 1, Runs: 1, Workers: f.Workers, Log: log})
		if err != nil {
			return err
		}
		if g.JSON {
			return g.PrintJSON(rep)
		}
		return capturebench.Markdown(g.IO.Out, rep)
	case f.FirstBuild:
		st, err := g.OpenBuilder(ctx)
		if err != nil {
			return err
		}
		if log == nil {
			st.Progress = nil
		}
		rep, err := buildbench.Run(ctx, st, buildbench.Options{Runs: f.BuildRuns, DemoScale: f.Scale, Migrations: f.Migrations, Workers: f.Workers, NoStore: !f.BuildStore, Log: log})
		if err != nil {
			return err
		}
		if g.JSON {
			return g.PrintJSON(rep)
		}
		return buildbench.Markdown(g.IO.Out, rep)
	case f.Compression:
		opt, err := f.Compress.options(f.Scale)
		if err != nil {
			return err
		}
		opt.Log = log
		rep, err := compressbench.Run(ctx, opt)
		if err != nil {
			return err
		}
		if g.JSON {
			return g.PrintJSON(rep)
		}
		return compressbench.Markdown(g.IO.Out, rep)
	case f.Render != "":
		var reps []*bench.Report
		var paths []string
		for _, p := range benchList(f.Render) {
			rep, err := bench.Load(p)
			if err != nil {
				return err
			}
			if _, err := bench.Charts(filepath.Dir(p), rep); err != nil {
				return err
			}
			reps, paths = append(reps, rep), append(paths, p)
		}
		return bench.Document(g.IO.Out, reps, paths)
	}
	opt, err := f.options()
	if err != nil {
		return err
	}
	opt.Log = log
	st, err := g.OpenBuilder(ctx)
	if err != nil {
		return err
	}
	if log == nil {
		st.Progress = nil
	}
	rep, err := bench.Compare(ctx, st, opt)
	if rep != nil && f.Out != "" {
		if serr := bench.Save(f.Out, rep); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return err
	}
	if g.JSON {
		return g.PrintJSON(rep)
	}
	return bench.Markdown(g.IO.Out, rep, nil)
}

// options turns the flags into bench options.
func (f BenchFlags) options() (bench.CompareOptions, error) {
	opt := bench.CompareOptions{Workers: f.Workers, MaxTime: f.MaxTime, EatMyData: f.EatMyData, Service: f.Reset,
		ServiceScale: f.ResetScale, Resets: f.Resets, ServiceSlots: f.ServiceSize, ServiceRuns: f.ServiceRuns, Methods: benchList(f.Methods)}
	for _, name := range benchList(f.Workloads) {
		w, ok := bench.Workloads[name]
		if !ok {
			return opt, fmt.Errorf("%w: --workload %q: want demo, demo10 or tables30k", cli.ErrUsage, name)
		}
		if w.Demo.Tables > 0 && f.ManyTables != w.Demo.Tables {
			w.Demo.Tables = f.ManyTables
			w.Name = fmt.Sprintf("tables%d", f.ManyTables)
		}
		w.Demo.Scale = max(w.Demo.Scale, 1) * f.Scale
		opt.Workloads = append(opt.Workloads, w)
	}
	for _, m := range opt.Methods {
		if !benchHas(bench.AllMethods, m) {
			return opt, fmt.Errorf("%w: --methods %q: want some of %s", cli.ErrUsage, m, strings.Join(bench.AllMethods, ","))
		}
	}
	var err error
	if opt.Copies, err = benchInts("--copies", f.Copies); err != nil {
		return opt, err
	}
	if opt.DBsPerSlot, err = benchInts("--dbs-per-slot", f.DBsPerSlot); err != nil {
		return opt, err
	}
	opt.Backends = benchList(f.Backends)
	return opt, nil
}

// options turns the --compression flags into its options.
func (c compressFlags) options(scale float64) (compressbench.Options, error) {
	size, err := units.Parse(c.ScratchSize)
	if err != nil {
		return compressbench.Options{}, fmt.Errorf("%w: --scratch-size: %v", cli.ErrUsage, err)
	}
	opt := compressbench.Options{Scale: scale, Slots: c.Slots, SoakClients: c.SoakClients, SoakTime: c.SoakTime, ScratchSize: size}
	for _, name := range benchList(c.Variants) {
		v, ok := compressbench.Variants[name]
		if !ok {
			return opt, fmt.Errorf("%w: --compress-variants %q: want some of plain, zstd, zstd+innodb, innodb", cli.ErrUsage, name)
		}
		opt.Variants = append(opt.Variants, v)
	}
	if c.Slots < 1 || c.SoakClients < 1 || c.SoakTime <= 0 {
		return opt, fmt.Errorf("%w: --compress-slots, --soak-clients and --soak-time must be positive", cli.ErrUsage)
	}
	return opt, nil
}

func benchList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func benchInts(flag, s string) ([]int, error) {
	var out []int
	for _, p := range benchList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: %s %q: want positive whole numbers separated by commas, e.g. 1,10,200", cli.ErrUsage, flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func benchHas(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
