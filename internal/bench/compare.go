// Package bench measures ways of getting pristine database copies on the
// machine it runs on, always beside a baseline run in the same invocation:
// the method comparison (`pristine-bench bench`), the service section and
// the soak, with their markdown, JSON and PNG charts and the generator of
// docs/benchmarks.md.
//
// Every measurement lives under internal/bench (archivebench, buildbench,
// capturebench, ocibench; benchcli is pristine-bench's command tree) and
// only pristine-bench imports it (imports_test.go checks that no core
// package, and not pristine's own command tree, does). What `pristine demo`
// shares with the service section (a pool cycle through the daemon, slot
// memory, the dump|load baseline) is in internal/demorun. Servers start
// through internal/mariadb like every other server pristine starts.
package bench

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/units"
)

// Method names, as --methods and the JSON's "method" spell them.
const (
	MethodDumpLoad    = "dumpload"     // mariadb-dump | mariadb into the same server
	MethodMyLoader    = "myloader"     // mydumper once, myloader per copy
	MethodImport      = "import"       // IMPORT TABLESPACE, secondary indexes kept
	MethodImportNoIdx = "import-noidx" // IMPORT without secondary indexes, added after
	MethodThin        = "thin"         // pristine slots on a copy-on-write clone
)

// AllMethods lists every method in the order rows are printed.
var AllMethods = []string{MethodDumpLoad, MethodMyLoader, MethodImport, MethodImportNoIdx, MethodThin}

// Workload is one schema the methods copy.
type Workload struct {
	Name string       `json:"name"`
	Demo demo.Options `json:"demo"`
}

// Workloads are the named workloads of `pristine-bench bench --workload`.
var Workloads = map[string]Workload{
	"demo":      {Name: "demo", Demo: demo.Options{}},
	"demo10":    {Name: "demo10", Demo: demo.Options{Scale: 10}},
	"tables30k": {Name: "tables30k", Demo: demo.Options{Tables: 30000}},
}

// CompareOptions shape `pristine-bench bench`.
type CompareOptions struct {
	Workloads []Workload
	Methods   []string // default AllMethods
	Copies    []int    // default 1, 10, 200
	Workers   int      // parallel workers of dumpload and myloader (default 4)
	// Backends for thin slots; empty means every backend the root's
	// filesystem supports.
	Backends   []string
	DBsPerSlot []int // K values for thin slots; default 1 and 10
	// MaxTime is the budget of one method on one workload; a method that
	// would exceed it stops and its rows are projections from its rate.
	MaxTime   time.Duration
	EatMyData bool // also run dumpload and myloader under eatmydata
	// Service adds the reset/lease/memory section (service.go).
	Service      bool
	ServiceScale float64 // demo scale of the large template (default 18, about 2 GB)
	ServiceSlots int     // slots of the pool-up measurement (default the largest of Copies)
	Resets       int     // single resets timed per template (default 20)
	// ServiceRuns is how many times the service section brings its pool
	// up; it reports the median (default 3).
	ServiceRuns int
	Log         io.Writer
}

// Row is one method at one copy count on one workload.
type Row struct {
	Workload   string `json:"workload"`
	Method     string `json:"method"`
	Backend    string `json:"backend,omitempty"`
	DBsPerSlot int    `json:"dbs_per_slot,omitempty"`
	Workers    int    `json:"workers,omitempty"`
	EatMyData  bool   `json:"eatmydata,omitempty"`
	Copies     int    `json:"copies"`
	// Seconds is the wall time to Copies usable copies from a built
	// template, setup included; a projection when Projected is set.
	Seconds   float64 `json:"seconds"`
	Projected bool    `json:"projected,omitempty"`
	// LowerBound marks a projection from copies that did not finish: the
	// real time is at least Seconds.
	LowerBound bool `json:"lower_bound,omitempty"`
	// Measured is how many copies were really made, in MeasuredSeconds.
	Measured        int     `json:"copies_measured"`
	MeasuredSeconds float64 `json:"measured_seconds"`
	SetupSeconds    float64 `json:"setup_seconds"`
	CopiesPerMinute float64 `json:"copies_per_minute"`
	CPUPerCopy      float64 `json:"cpu_seconds_per_copy"`
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	DiskMB          float64 `json:"disk_mb"`
	// Ratio is Seconds divided by serial dumpload's Seconds at the same
	// copy count on the same workload (below 1 is faster).
	Ratio   float64 `json:"ratio_to_serial_dumpload,omitempty"`
	Stopped string  `json:"stopped,omitempty"` // why fewer copies were made
	Error   string  `json:"error,omitempty"`
}

// WorkloadInfo describes a workload's template.
type WorkloadInfo struct {
	Name         string  `json:"name"`
	Tables       int     `json:"tables"`
	Scale        float64 `json:"scale"`
	TemplateMB   float64 `json:"template_mb"`
	BuildSeconds float64 `json:"build_seconds"`
}

// Report is everything one `pristine-bench bench` run measured.
type Report struct {
	Machine   Machine        `json:"machine"`
	Started   time.Time      `json:"started"`
	Seconds   float64        `json:"seconds"`
	MaxTime   float64        `json:"max_time_seconds"`
	Workloads []WorkloadInfo `json:"workloads"`
	Rows      []Row          `json:"rows"`
	Service   []ServiceRow   `json:"service,omitempty"`
}

func (o *CompareOptions) defaults() {
	if len(o.Methods) == 0 {
		o.Methods = AllMethods
	}
	if len(o.Copies) == 0 {
		o.Copies = []int{1, 10, 200}
	}
	slices.Sort(o.Copies)
	o.Copies = slices.Compact(o.Copies)
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if len(o.DBsPerSlot) == 0 {
		o.DBsPerSlot = []int{1, 10}
	}
	if o.MaxTime <= 0 {
		o.MaxTime = 5 * time.Minute
	}
	if len(o.Workloads) == 0 {
		o.Workloads = []Workload{Workloads["demo"]}
	}
	if o.ServiceScale <= 0 {
		o.ServiceScale = 18
	}
	if o.ServiceSlots <= 0 {
		o.ServiceSlots = o.Copies[len(o.Copies)-1]
	}
	if o.ServiceRuns <= 0 {
		o.ServiceRuns = 3
	}
	if o.Resets <= 0 {
		o.Resets = 20
	}
}

// Compare runs every method on every workload of opt against store and
// returns the rows. Templates it builds are named bench-<workload> and are
// removed at the end; servers and copies are removed as each method ends.
func Compare(ctx context.Context, store *template.Builder, opt CompareOptions) (*Report, error) {
	opt.defaults()
	// The driver logs a line for every connection to a server a pool has
	// just killed on purpose.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	r := &runner{store: store, opt: opt, rep: &Report{Machine: describeMachine(store), Started: time.Now().UTC(), MaxTime: opt.MaxTime.Seconds()}}
	start := time.Now()
	for _, w := range opt.Workloads {
		if err := r.workload(ctx, w); err != nil {
			return r.rep, err
		}
	}
	if opt.Service {
		if err := r.service(ctx); err != nil {
			return r.rep, err
		}
	}
	r.rep.Seconds = time.Since(start).Seconds()
	r.rep.Machine.LoadAfter = stats.LoadAverage()
	return r.rep, nil
}

// runner carries one Compare run.
type runner struct {
	store *template.Builder
	opt   CompareOptions
	rep   *Report
}

func (r *runner) say(format string, args ...any) {
	if r.opt.Log != nil {
		fmt.Fprintf(r.opt.Log, "pristine-bench bench: "+format+"\n", args...)
	}
}

func (r *runner) has(method string) bool { return slices.Contains(r.opt.Methods, method) }

// workload builds the workload's template and runs every method on it.
func (r *runner) workload(ctx context.Context, w Workload) error {
	m, err := r.buildTemplate(ctx, w, 1, "")
	if err != nil {
		return err
	}
	defer r.removeTemplate(m)
	tables := w.Demo.Tables
	if tables == 0 {
		tables = demo.DefaultTables
	}
	r.rep.Workloads = append(r.rep.Workloads, WorkloadInfo{Name: w.Name, Tables: tables, Scale: max(w.Demo.Scale, 1),
		TemplateMB: float64(m.Bytes) / (1 << 20), BuildSeconds: m.BuildSeconds})
	first := len(r.rep.Rows)
	variants := []bool{false}
	if r.opt.EatMyData {
		variants = append(variants, true)
	}
	for _, eat := range variants {
		if r.has(MethodDumpLoad) {
			r.add(r.runCopier(ctx, w, m, &dumpLoader{workers: 1, eat: eat}))
			if r.opt.Workers > 1 {
				r.add(r.runCopier(ctx, w, m, &dumpLoader{workers: r.opt.Workers, eat: eat}))
			}
		}
		if r.has(MethodMyLoader) {
			r.add(r.runCopier(ctx, w, m, &myLoader{workers: r.opt.Workers, eat: eat}))
		}
	}
	if r.has(MethodImport) {
		r.add(r.runCopier(ctx, w, m, &importer{}))
	}
	if r.has(MethodImportNoIdx) {
		r.add(r.runCopier(ctx, w, m, &importer{noIdx: true}))
	}
	if r.has(MethodThin) {
		if err := r.thin(ctx, w, m); err != nil {
			return err
		}
	}
	ratios(r.rep.Rows[first:])
	return ctx.Err()
}

func (r *runner) add(rows []Row) { r.rep.Rows = append(r.rep.Rows, rows...) }

// buildTemplate builds (or finds) the workload's template, with k databases
// per slot, on the named backend ("" for the store's).
func (r *runner) buildTemplate(ctx context.Context, w Workload, k int, backend string) (*catalog.Meta, error) {
	sqlPath := filepath.Join(r.store.Catalog().Root().Path, "tmp", "bench-"+w.Name+".sql")
	if err := writeWorkloadSQL(sqlPath, w.Demo); err != nil {
		return nil, err
	}
	defer os.Remove(sqlPath)
	name := "bench-" + w.Name
	st := r.store
	if k > 1 {
		name += fmt.Sprintf("-k%d", k)
	}
	if backend != "" && backend != st.Catalog().Backend().Name() {
		name += "-" + backend
		b, err := backendByName(st, backend)
		if err != nil {
			return nil, err
		}
		cat, err := catalog.Open(st.Catalog().Root(), b)
		if err != nil {
			return nil, err
		}
		nb := template.NewBuilder(cat, st.Binary())
		nb.Progress = st.Progress
		st = nb
	}
	r.say("%s: building template %s", w.Name, name)
	m, _, err := st.Build(ctx, template.BuildOptions{Name: name, FromSQL: sqlPath, Database: "bench", DBsPerSlot: k, Profile: profileFor(st), Workers: 4})
	if err != nil {
		return nil, fmt.Errorf("bench %s: %w", w.Name, err)
	}
	r.say("%s: template %s: %s on disk, built in %.1fs", w.Name, name, units.Bytes(m.Bytes), m.BuildSeconds)
	return m, nil
}

func (r *runner) removeTemplate(m *catalog.Meta) {
	if err := r.store.Catalog().Remove(m, nil); err != nil {
		r.say("remove template %s: %v", m.Name, err)
	}
}

// profileFor is the server profile of the benchmarks' templates.
func profileFor(*template.Builder) mariadb.Profile { return mariadb.DefaultProfile() }

// writeWorkloadSQL writes the demo schema generator's SQL for opt to path.
func writeWorkloadSQL(path string, opt demo.Options) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeAtomic(path, func(w io.Writer) error { return demo.Write(w, opt) })
}

// ratios fills each row's ratio to serial dumpload at the same copy count.
func ratios(rows []Row) {
	base := map[int]float64{}
	for _, r := range rows {
		if r.Method == MethodDumpLoad && r.Workers == 1 && !r.EatMyData && r.Seconds > 0 {
			base[r.Copies] = r.Seconds
		}
	}
	for i := range rows {
		if b := base[rows[i].Copies]; b > 0 && rows[i].Seconds > 0 {
			rows[i].Ratio = rows[i].Seconds / b
		}
	}
}

// finish fills the derived figures of a row.
func (row *Row) finish() {
	if row.Seconds > 0 {
		row.CopiesPerMinute = float64(row.Copies) / row.Seconds * 60
	}
	row.Seconds = round3(row.Seconds)
	row.MeasuredSeconds = round3(row.MeasuredSeconds)
	row.SetupSeconds = round3(row.SetupSeconds)
	row.CopiesPerMinute = round3(row.CopiesPerMinute)
	row.CPUPerCopy = round3(row.CPUPerCopy)
	row.PeakRSSMB = math.Round(row.PeakRSSMB*10) / 10
	row.DiskMB = math.Round(row.DiskMB*10) / 10
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
