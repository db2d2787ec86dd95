// Package buildbench measures first template builds (create + migrate of
// a real schema) against the stock path: a plain mariadbd with its data on
// tmpfs, already running, loading the same SQL with the same client
// (internal/sqlload). Pristine's figures are a whole template build, end
// to end (base clone, server start, the load, the checks, the slow clean
// shutdown, the move into the copy-on-write store and the publish), and
// the same build followed by a pool of one slot and its first lease, with
// the build's timeline (template.Timeline) per phase. It is
// `pristine-bench bench --first-build`.
package buildbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/sqlload"
	"github.com/pristinedb/pristine/internal/template"
	"golang.org/x/sys/unix"
)

// Options says what to measure.
type Options struct {
	// Dir is the tmpfs the stock server keeps its data in (default
	// /dev/shm).
	Dir string
	// Runs is how many times each row is timed; the median is reported
	// (default 3).
	Runs int
	// DemoScale scales the demo schema's data (default 1, about 110 MB).
	DemoScale float64
	// Migrations is the number of models of the DDL-heavy migration set
	// (default 300): each a CREATE TABLE, then ALTERs adding a column, an
	// index and a foreign key, one statement at a time.
	Migrations int
	// Workers are the load connections of the demo schema (default 4); the
	// migrations run on one, in order, as a framework's migrate does.
	Workers int
	// NoStore leaves out the builds on the store (--no-ram-build), which
	// take minutes for thousands of models.
	NoStore bool
	Log     io.Writer
}

// Result is one timed row.
type Result struct {
	Workload string    `json:"workload"`
	Method   string    `json:"method"`
	Seconds  float64   `json:"seconds"`         // median of the runs
	Ratio    float64   `json:"ratio,omitempty"` // Seconds / the stock row's
	Runs     []float64 `json:"runs"`
}

// Report is what Run measured.
type Report struct {
	Store     string `json:"store"`     // filesystem of the template store
	StockDir  string `json:"stock_dir"` // where the stock server's data was
	Server    string `json:"server"`
	Cores     int    `json:"cores"`
	LoadStart string `json:"load_start"` // load average when the run began
	Load      string `json:"load"`       // and when it ended
	// Statements says per workload what it runs.
	Statements []string   `json:"statements"`
	Results    []Result   `json:"results"`
	Phases     []PhaseRow `json:"phases"`
}

// PhaseRow is one phase of the in-RAM builds' timeline, from the build
// asked for to the first lease of a pool of one slot: the median over the
// runs, and its share of the median build.
type PhaseRow struct {
	Workload string    `json:"workload"`
	Phase    string    `json:"phase"`
	Seconds  float64   `json:"seconds"`
	Runs     []float64 `json:"runs"`
}

type workload struct {
	name, what string
	file       string
	workers    int
}

// Run measures every workload three ways: the stock server on tmpfs,
// pristine building in RAM (the default), and pristine building on the
// store (--no-ram-build, the old path).
func Run(ctx context.Context, st *template.Builder, opt Options) (*Report, error) {
	if opt.Dir == "" {
		opt.Dir = "/dev/shm"
	}
	if opt.Runs <= 0 {
		opt.Runs = 3
	}
	if opt.DemoScale <= 0 {
		opt.DemoScale = 1
	}
	if opt.Migrations <= 0 {
		opt.Migrations = 300
	}
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	logf := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "bench: "+format+"\n", args...)
		}
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(opt.Dir, &sfs); err != nil || sfs.Type != unix.TMPFS_MAGIC {
		return nil, fmt.Errorf("bench --first-build: %s is not a tmpfs: the stock baseline keeps its data in RAM; pass a tmpfs directory", opt.Dir)
	}
	work, err := os.MkdirTemp(opt.Dir, "pristine-buildbench-")
	if err != nil {
		return nil, fmt.Errorf("bench --first-build: %w", err)
	}
	defer os.RemoveAll(work)
	if err := os.Chmod(work, 0o711); err != nil { // the servers' account passes through
		return nil, err
	}
	rep := &Report{Store: fsName(st.Catalog().Root().Data()), StockDir: opt.Dir, Server: st.Binary().Version, Cores: numCPU(), LoadStart: loadAverage()}
	wls, err := writeWorkloads(work, opt)
	if err != nil {
		return nil, err
	}
	// The base data directory is made once per server version: not part
	// of any row.
	logf("warming up: the base data directory")
	warm := filepath.Join(work, "warmup.sql")
	if err := os.WriteFile(warm, []byte("CREATE TABLE warm (id INT PRIMARY KEY);\n"), 0o644); err != nil {
		return nil, err
	}
	if _, err := buildOnce(ctx, st, "bench-build-warmup", warm, 1, false, nil); err != nil {
		return nil, err
	}
	for _, wl := range wls {
		rep.Statements = append(rep.Statements, wl.name+": "+wl.what)
		methods := []string{"stock mariadbd, data on tmpfs (baseline)", "pristine template build, in RAM (default)",
			"pristine, in RAM, to the first lease (build, pool of 1 up, lease)", "pristine template build, on the store (--no-ram-build)"}
		if opt.NoStore {
			methods = methods[:3]
		}
		rows := make([]Result, len(methods))
		for i, m := range methods {
			rows[i] = Result{Workload: wl.name, Method: m}
		}
		var timelines [][]template.Phase
		for run := range opt.Runs {
			logf("%s: run %d of %d: stock", wl.name, run+1, opt.Runs)
			d, err := stock(ctx, st.Binary(), filepath.Join(work, "stock"), wl)
			if err != nil {
				return nil, err
			}
			rows[0].Runs = append(rows[0].Runs, d.Seconds())
			logf("%s: run %d of %d: %s", wl.name, run+1, opt.Runs, rows[1].Method)
			tl := template.NewTimeline()
			m, err := buildOnce(ctx, st, "bench-build-"+wl.name, wl.file, wl.workers, false, tl)
			if err != nil {
				return nil, err
			}
			rows[1].Runs = append(rows[1].Runs, sum(tl.Phases()))
			if err := firstLease(ctx, st, m, tl); err != nil {
				return nil, err
			}
			rows[2].Runs = append(rows[2].Runs, sum(tl.Phases()))
			timelines = append(timelines, tl.Phases())
			if !opt.NoStore {
				logf("%s: run %d of %d: %s", wl.name, run+1, opt.Runs, rows[3].Method)
				tl := template.NewTimeline()
				if _, err := buildOnce(ctx, st, "bench-build-"+wl.name, wl.file, wl.workers, true, tl); err != nil {
					return nil, err
				}
				rows[3].Runs = append(rows[3].Runs, sum(tl.Phases()))
			}
		}
		rep.Phases = append(rep.Phases, phaseRows(wl.name, timelines)...)
		for i := range rows {
			rows[i].Seconds = median(rows[i].Runs)
			if i > 0 && rows[0].Seconds > 0 {
				rows[i].Ratio = rows[i].Seconds / rows[0].Seconds
			}
		}
		rep.Results = append(rep.Results, rows...)
	}
	for _, name := range []string{"bench-build-warmup", "bench-build-demo", "bench-build-migrate"} {
		removeTemplates(st, name)
	}
	rep.Load = loadAverage()
	return rep, nil
}

// buildOnce runs one template build of file (a rebuild when it exists),
// its phases recorded in tl (nil: not recorded).
func buildOnce(ctx context.Context, st *template.Builder, name, file string, workers int, noRAM bool, tl *template.Timeline) (*catalog.Meta, error) {
	saved := st.RAM
	st.RAM.Off = noRAM
	defer func() { st.RAM = saved }()
	// The previous run's template goes first, untimed: a first build has
	// none to remove (the warm-up template keeps the base data directory).
	removeTemplates(st, name)
	if tl != nil {
		ctx = template.WithTimeline(ctx, tl)
		tl.Restart()
	}
	m, _, err := st.Build(ctx, template.BuildOptions{Name: name, FromSQL: file, Profile: mariadb.DefaultProfile(), Workers: workers, Rebuild: true})
	if err != nil {
		return nil, fmt.Errorf("bench --first-build: %w", err)
	}
	return m, nil
}

// firstLease brings up a pool of one slot of the template m just built,
// takes its first lease and takes the pool down again, recording the
// pool's start and the lease in tl (the pool's removal is not timed).
func firstLease(ctx context.Context, st *template.Builder, m *catalog.Meta, tl *template.Timeline) error {
	p, err := pool.Up(ctx, st.Catalog(), st.Binary(), m, pool.Options{Size: 1})
	if err != nil {
		return fmt.Errorf("bench --first-build: pool up: %w", err)
	}
	defer p.Down(context.WithoutCancel(ctx))
	tl.Mark(template.PhasePoolUp)
	if _, err := p.Lease(ctx, pool.LeaseOptions{Holder: "bench"}); err != nil {
		return fmt.Errorf("bench --first-build: first lease: %w", err)
	}
	tl.Mark(template.PhaseLease)
	return nil
}

// phaseRows are the medians of each phase over the timelines, in the
// order the phases ran.
func phaseRows(workload string, timelines [][]template.Phase) []PhaseRow {
	var rows []PhaseRow
	at := map[string]int{}
	for _, tl := range timelines {
		for _, ph := range tl {
			i, ok := at[ph.Name]
			if !ok {
				i = len(rows)
				at[ph.Name] = i
				rows = append(rows, PhaseRow{Workload: workload, Phase: ph.Name})
			}
			rows[i].Runs = append(rows[i].Runs, ph.Seconds)
		}
	}
	for i := range rows {
		rows[i].Seconds = median(rows[i].Runs)
	}
	return rows
}

func sum(phases []template.Phase) float64 {
	var s float64
	for _, p := range phases {
		s += p.Seconds
	}
	return s
}

// loadAverage is /proc/loadavg's three averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// stock times CREATE DATABASE and the load of wl on a plain server with
// its data in dir (tmpfs), started beforehand as a test run finds it.
func stock(ctx context.Context, bin *mariadb.Binary, dir string, wl workload) (time.Duration, error) {
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return 0, err
	}
	data := filepath.Join(dir, "data")
	if err := bin.InitDatadir(ctx, data); err != nil {
		return 0, fmt.Errorf("bench --first-build: stock server: %w", err)
	}
	// The same server settings as a template build.
	srv, err := mariadb.Start(bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(dir, "run"), Profile: mariadb.BuildProfile(mariadb.DefaultProfile())})
	if err != nil {
		return 0, fmt.Errorf("bench --first-build: stock server: %w", err)
	}
	defer srv.Kill()
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	err = srv.WaitReady(wait)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("bench --first-build: stock server: %w", err)
	}
	srcs, err := sqlload.Sources(wl.file, nil)
	if err != nil {
		return 0, err
	}
	db, err := srv.Open("")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return 0, err
	}
	// The loader creates the database, as it does in a template build.
	start := time.Now()
	if _, err := sqlload.Load(ctx, srv.DSN(""), srcs, sqlload.Options{Database: "app", Workers: wl.workers}); err != nil {
		return 0, fmt.Errorf("bench --first-build: stock load: %w", err)
	}
	return time.Since(start), nil
}

// writeWorkloads writes the demo schema and the migration set to work.
func writeWorkloads(work string, opt Options) ([]workload, error) {
	demoFile := filepath.Join(work, "demo.sql")
	f, err := os.Create(demoFile)
	if err != nil {
		return nil, err
	}
	err = demo.Write(f, demo.Options{Scale: opt.DemoScale})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	migFile := filepath.Join(work, "migrate.sql")
	if err := os.WriteFile(migFile, []byte(Migrations(opt.Migrations)), 0o644); err != nil {
		return nil, err
	}
	return []workload{
		{name: "demo", what: fmt.Sprintf("the demo template's SQL (51 tables, scale %g), %d load connections", opt.DemoScale, opt.Workers), file: demoFile, workers: opt.Workers},
		{name: "migrate", what: fmt.Sprintf("%d models: CREATE TABLE, then ALTER TABLE adding a column, an index and a foreign key, %d statements one at a time on one connection", opt.Migrations, 4*opt.Migrations-1), file: migFile, workers: 1},
	}, nil
}

// Migrations is a DDL-heavy migration set as a framework's migrate runs
// it: n models, each created, then altered three times (a new column, an
// index, a foreign key to the previous model).
func Migrations(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "CREATE TABLE app_model%d (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, created DATETIME(6) NOT NULL, parent_id BIGINT NULL) ENGINE=InnoDB;\n", i)
	}
	for i := range n {
		fmt.Fprintf(&b, "ALTER TABLE app_model%d ADD COLUMN extra INT NOT NULL DEFAULT 0;\n", i)
		fmt.Fprintf(&b, "ALTER TABLE app_model%d ADD INDEX app_model%d_name (name);\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "ALTER TABLE app_model%d ADD CONSTRAINT app_model%d_parent_fk FOREIGN KEY (parent_id) REFERENCES app_model%d (id);\n", i, i, i-1)
		}
	}
	return b.String()
}

func removeTemplates(st *template.Builder, name string) {
	all, _ := st.Catalog().List()
	for _, m := range all {
		if m.Name == name {
			_ = st.Catalog().Remove(m, func(string) bool { return false })
		}
	}
	_, _ = st.Catalog().PruneBases()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
