package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pristinedb/pristine/internal/demorun"
)

// The front page's generated blocks: the README's sample output and the
// summary table that opens docs/benchmarks.md. Each sits between
//
//	<!-- BEGIN name from SOURCE SOURCE...: ... -->
//	<!-- END name -->
//
// and is rendered from the saved runs its BEGIN line names alone (paths
// relative to the repository), so docs/frontpage_test.go can render it
// again and fail when the text differs: nobody edits these figures by
// hand. scripts/readme-sample.sh makes a run and rewrites both.
//
// The method comparison of docs/benchmarks.md (Runs) is a block of the
// same kind, rewritten by scripts/bench.sh after its runs.
const (
	ReadmeBlock    = "readme-sample"
	SummaryBlock   = "benchmarks-summary"
	BenchRunsBlock = "bench-runs"
)

// FrontPageFiles are the documents that hold each block, relative to the
// repository.
var FrontPageFiles = map[string]string{ReadmeBlock: "README.md", SummaryBlock: "docs/benchmarks.md", BenchRunsBlock: "docs/benchmarks.md"}

// Block is a generated region of a document as found in it.
type Block struct {
	Name    string
	Sources []string // saved runs it is rendered from, relative to the repository
	Body    string   // the text between the BEGIN and END lines
	begin   int      // offset of the BEGIN line
	end     int      // offset just past the END line
}

func beginLine(name string, sources []string) string {
	script := "scripts/readme-sample.sh"
	if name == BenchRunsBlock {
		script = "scripts/bench.sh"
	}
	return fmt.Sprintf("<!-- BEGIN %s from %s: written by %s; docs/frontpage_test.go fails when it is edited by hand -->\n", name, strings.Join(sources, " "), script)
}

func endLine(name string) string { return "<!-- END " + name + " -->\n" }

// FindBlock finds block name in doc.
func FindBlock(doc, name string) (*Block, error) {
	prefix := "<!-- BEGIN " + name + " from "
	b := strings.Index(doc, prefix)
	if b < 0 || strings.Count(doc, prefix) > 1 {
		return nil, fmt.Errorf("no single %q line: the block's markers must be in place once (see scripts/readme-sample.sh)", strings.TrimSpace(prefix))
	}
	nl := strings.IndexByte(doc[b:], '\n')
	if nl < 0 {
		return nil, fmt.Errorf("%s: the BEGIN line has no end", name)
	}
	head := doc[b+len(prefix) : b+nl]
	srcs, _, ok := strings.Cut(head, ":")
	if !ok || len(strings.Fields(srcs)) == 0 {
		return nil, fmt.Errorf("%s: the BEGIN line names no saved run (want %q)", name, strings.TrimSpace(beginLine(name, []string{"docs/runs/FILE.json"})))
	}
	e := strings.Index(doc[b:], endLine(name))
	if e < 0 {
		return nil, fmt.Errorf("%s: no %q line after its BEGIN line", name, strings.TrimSpace(endLine(name)))
	}
	return &Block{Name: name, Sources: strings.Fields(srcs), Body: doc[b+nl+1 : b+e], begin: b, end: b + e + len(endLine(name))}, nil
}

// Replace returns doc with the block rewritten: its sources and body.
func (bl *Block) Replace(doc string, sources []string, body string) string {
	return doc[:bl.begin] + beginLine(bl.Name, sources) + body + endLine(bl.Name) + doc[bl.end:]
}

// RenderBlock renders block name from its sources, read under repo.
func RenderBlock(repo, name string, sources []string) (string, error) {
	switch name {
	case ReadmeBlock:
		if len(sources) != 1 {
			return "", fmt.Errorf("%s: renders from one saved demo run, not %d", name, len(sources))
		}
		run, err := LoadDemoRun(filepath.Join(repo, sources[0]))
		if err != nil {
			return "", err
		}
		return ReadmeSample(run, sources[0]), nil
	case SummaryBlock:
		var runs []*demorun.DemoResult
		var reps []*Report
		var runPaths, repPaths []string
		for _, s := range sources {
			if strings.HasPrefix(s, "docs/runs/") {
				r, err := LoadDemoRun(filepath.Join(repo, s))
				if err != nil {
					return "", err
				}
				runs, runPaths = append(runs, r), append(runPaths, s)
				continue
			}
			rep, err := Load(filepath.Join(repo, s))
			if err != nil {
				return "", err
			}
			reps, repPaths = append(reps, rep), append(repPaths, s)
		}
		return Summary(runs, runPaths, reps, repPaths), nil
	case BenchRunsBlock:
		reps := make([]*Report, len(sources))
		for i, s := range sources {
			rep, err := Load(filepath.Join(repo, s))
			if err != nil {
				return "", err
			}
			reps[i] = rep
		}
		var b bytes.Buffer
		if err := Runs(&b, reps, sources); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("no generated block is called %q", name)
}

// CheckBlock renders the block of its file under repo again from the
// saved runs it names and reports where the two differ.
func CheckBlock(repo, name string) error {
	file := FrontPageFiles[name]
	doc, err := os.ReadFile(filepath.Join(repo, file))
	if err != nil {
		return err
	}
	bl, err := FindBlock(string(doc), name)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	want, err := RenderBlock(repo, name, bl.Sources)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if bl.Body == want {
		return nil
	}
	got, exp := strings.Split(bl.Body, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(got) && i < len(exp) && got[i] == exp[i] {
		i++
	}
	line := func(l []string) string {
		if i < len(l) {
			return l[i]
		}
		return "(end of block)"
	}
	fix := fmt.Sprintf("`bash scripts/readme-sample.sh --from %s` (or make a new run with `sudo bash scripts/readme-sample.sh`)", readmeRun(repo))
	if name == BenchRunsBlock {
		fix = "`pristine-bench front-page --bench-runs " + strings.Join(bl.Sources, ",") + "` (or new runs with `sudo bash scripts/bench.sh`)"
	}
	return fmt.Errorf("%s: the %s block differs from what %s renders to, at its line %d:\n  in the file: %s\n  rendered:    %s\nits figures come from saved runs, not by hand: rewrite it with %s",
		file, name, strings.Join(bl.Sources, ", "), i+1, line(got), line(exp), fix)
}

// readmeRun is the saved run the README's sample names, for the fix a
// failure prints.
func readmeRun(repo string) string {
	doc, err := os.ReadFile(filepath.Join(repo, FrontPageFiles[ReadmeBlock]))
	if err != nil {
		return "docs/runs/FILE.json"
	}
	if bl, err := FindBlock(string(doc), ReadmeBlock); err == nil && len(bl.Sources) == 1 {
		return bl.Sources[0]
	}
	return "docs/runs/FILE.json"
}

// WriteBlock rewrites block name of its file under repo from sources.
func WriteBlock(repo, name string, sources []string) error {
	path := filepath.Join(repo, FrontPageFiles[name])
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	bl, err := FindBlock(string(doc), name)
	if err != nil {
		return fmt.Errorf("%s: %w", FrontPageFiles[name], err)
	}
	body, err := RenderBlock(repo, name, sources)
	if err != nil {
		return err
	}
	return writeFile(path, []byte(bl.Replace(string(doc), sources, body)))
}

// WriteFrontPage rewrites both blocks under repo: the README's sample from
// run, and the summary from the demo runs and method comparisons its block
// already names (docs/bench/*/bench.json) with run added after the other
// demo runs: the README shows the newest run, the summary every run kept
// (a run is dropped from it by deleting its file).
func WriteFrontPage(repo, run string) error {
	if err := WriteBlock(repo, ReadmeBlock, []string{run}); err != nil {
		return err
	}
	doc, err := os.ReadFile(filepath.Join(repo, FrontPageFiles[SummaryBlock]))
	if err != nil {
		return err
	}
	bl, err := FindBlock(string(doc), SummaryBlock)
	if err != nil {
		return fmt.Errorf("%s: %w", FrontPageFiles[SummaryBlock], err)
	}
	var runs, reports []string
	for _, s := range bl.Sources {
		switch {
		case !strings.HasPrefix(s, "docs/runs/"):
			reports = append(reports, s)
		case s != run && fileExists(filepath.Join(repo, s)):
			runs = append(runs, s)
		}
	}
	return WriteBlock(repo, SummaryBlock, append(append(runs, run), reports...))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// LoadDemoRun reads a run `pristine demo --json` printed.
func LoadDemoRun(path string) (*demorun.DemoResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r demorun.DemoResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if r.Started.IsZero() || r.Machine.Cores == 0 || len(r.Runs) == 0 {
		return nil, errors.New(path + ": not a saved run of `pristine demo --json` that names its machine and date (started, machine, runs)")
	}
	return &r, nil
}

// ReadmeSample is the README's sample: where and when the run was made,
// then what `pristine demo` printed, rendered from the run alone.
func ReadmeSample(r *demorun.DemoResult, path string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "A real run of it, saved in [%s](%s) and rendered from there by scripts/readme-sample.sh: %s (UTC) on %s; %s; MariaDB server %s.\n",
		path, path, r.Started.Format("2006-01-02 15:04"), r.Machine, pristineOf(r), r.Server)
	fmt.Fprintf(&b, "The load average (1, 5, 15 min) was %s before the demo and %s after; it is beside every run below, since other work on the machine moves these figures.", r.LoadBefore, r.LoadAfter)
	if busy(r.LoadBefore, r.Machine.Cores) {
		fmt.Fprintf(&b, " Other work shared the machine during this run (a load average of %s on %d cores before the demo started).", first(r.LoadBefore), r.Machine.Cores)
	}
	fmt.Fprint(&b, "\n\n```\n$ sudo pristine demo     # what scripts/demo.sh runs, after installing and building\n")
	demorun.WriteText(&b, r)
	fmt.Fprint(&b, "```\n")
	return b.String()
}

// pristineOf names the pristine that made the run.
func pristineOf(r *demorun.DemoResult) string {
	if r.Pristine == "" {
		return "pristine of an unrecorded version"
	}
	return "pristine " + r.Pristine
}

// first is the first field of a load average ("1.20 0.80 0.50": 1.20).
func first(load string) string {
	if f := strings.Fields(load); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// busy says whether a 1-minute load average of half the cores or more
// was there before a run began: work the run did not start.
func busy(load string, cores int) bool {
	var l float64
	if _, err := fmt.Sscan(first(load), &l); err != nil {
		return false
	}
	return l >= float64(cores)/2
}

// shared is the summary's note on a run that began on a busy machine.
func shared(load string, cores int) string {
	if busy(load, cores) {
		return " (other work shared the machine)"
	}
	return ""
}

// summaryRow is one method of the summary table.
type summaryRow struct {
	method, seconds, perSec, first, reset, lease, run string
	sortKey                                           float64
}

// Summary is the table that opens docs/benchmarks.md: every method for
// the largest copy count of the demo workload in the saved runs, with the
// time to that many copies, copies per second, resets and leases, each
// row naming its run; below it, each run's machine, date and load.
func Summary(runs []*demorun.DemoResult, runPaths []string, reps []*Report, repPaths []string) string {
	var b bytes.Buffer
	var rows []summaryRow
	var legend []string
	id := 'A'
	for i, r := range runs {
		ref := string(id)
		id++
		rows = append(rows, demoRows(r, ref)...)
		legend = append(legend, fmt.Sprintf("- **%s**: `pristine demo` (%d runs, the median), %s (UTC); %s; MariaDB %s, %s backend on a RAM-backed scratch filesystem; %s; load average %s before, %s after%s. [%s](%s)",
			ref, len(r.Runs), r.Started.Format("2006-01-02 15:04"), r.Machine, r.Server, r.Backend, pristineOf(r), r.LoadBefore, r.LoadAfter, shared(r.LoadBefore, r.Machine.Cores), strings.TrimPrefix(runPaths[i], "docs/"), strings.TrimPrefix(runPaths[i], "docs/")))
	}
	for i, rep := range reps {
		ref := string(id)
		id++
		rows = append(rows, reportRows(rep, ref)...)
		m := rep.Machine
		legend = append(legend, fmt.Sprintf("- **%s**: `pristine-bench bench`, %s (UTC); %s; MariaDB %s; data on %s; load average %s before, %s after%s; a method's budget %.0f s, past it the time is projected from its measured rate. [%s](%s)",
			ref, rep.Started.Format("2006-01-02 15:04"), m.Host, m.Server, m.Filesystem, m.LoadBefore, m.LoadAfter, shared(m.LoadBefore, m.Cores), rep.MaxTime, strings.TrimPrefix(repPaths[i], "docs/"), strings.TrimPrefix(repPaths[i], "docs/")))
	}
	fmt.Fprint(&b, "| method | time to the copies | copies/s | first lease | reset p50 / p99 | lease p50 / p99 | run |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.method, r.seconds, r.perSec, r.first, r.reset, r.lease, r.run)
	}
	fmt.Fprint(&b, "\n")
	for _, l := range legend {
		fmt.Fprintln(&b, l)
	}
	return b.String()
}

// demoRows are a demo run's methods: pristine's slots through the daemon
// and the run's own mariadb-dump | mariadb.
func demoRows(r *demorun.DemoResult, ref string) []summaryRow {
	rows := []summaryRow{{
		method:  fmt.Sprintf("pristine slots through the daemon, %d of the demo template (thin %s, 1 db/slot)", r.Slots, r.Backend),
		seconds: secs(r.PoolUpSeconds),
		perSec:  perSecond(r.Slots, r.PoolUpSeconds),
		reset:   fmt.Sprintf("%.0f / %.0f ms (all %d released at once)", r.ResetP50MS, r.ResetP99MS, r.Slots),
		lease:   fmt.Sprintf("%.2f / %.2f ms", r.LeaseP50MS, r.LeaseP99MS),
		run:     ref,
	}}
	if r.FirstLeaseSeconds > 0 {
		rows[0].first = secs(r.FirstLeaseSeconds) + " (asked for with the pool-up)"
	}
	if r.DumpLoadSeconds > 0 {
		rows = append(rows, summaryRow{
			method:  fmt.Sprintf("mariadb-dump \\| mariadb, %d copies", r.Slots),
			seconds: "**projected** " + secs(r.DumpLoad200Proj) + " (1 copy measured: " + secs(r.DumpLoadSeconds) + ")",
			perSec:  perSecond(r.Slots, r.DumpLoad200Proj),
			reset:   secs(r.DumpLoadSeconds) + " (a new copy)",
			run:     ref,
		})
	}
	return rows
}

// reportRows are a method comparison's rows of the demo workload at its
// largest copy count, fastest first, and its service section's pool of
// the demo template (leases, single resets).
func reportRows(rep *Report, ref string) []summaryRow {
	most := 0
	for _, row := range rep.Rows {
		if row.Workload == "demo" {
			most = max(most, row.Copies)
		}
	}
	var rows []summaryRow
	for _, row := range rep.Rows {
		if row.Workload != "demo" || row.Copies != most || row.Error != "" {
			continue
		}
		t := secs(row.Seconds)
		switch {
		case row.LowerBound:
			t = "**projected, at least** " + t
		case row.Projected:
			t = "**projected** " + t
		}
		rows = append(rows, summaryRow{method: fmt.Sprintf("%s, %d copies", row.Label(), row.Copies), seconds: t, perSec: perSecond(row.Copies, row.Seconds), run: ref, sortKey: row.Seconds})
	}
	for _, s := range rep.Service {
		if s.Scale != 1 || s.Leases == 0 || s.Error != "" { // the demo template's pool, not the large template's resets
			continue
		}
		rows = append(rows, summaryRow{
			method:  fmt.Sprintf("pristine slots through the daemon, %d of the demo template (thin %s, 1 db/slot)", s.Slots, rep.Machine.Backend),
			seconds: secs(s.PoolUpSeconds),
			perSec:  perSecond(s.Slots, s.PoolUpSeconds),
			reset:   fmt.Sprintf("%.0f / %.0f ms (%d single resets, idle pool)", s.ResetP50MS, s.ResetP99MS, s.Resets),
			lease:   fmt.Sprintf("%.2f / %.2f ms", s.LeaseP50MS, s.LeaseP99MS),
			run:     ref,
			sortKey: s.PoolUpSeconds,
		})
	}
	slices.SortStableFunc(rows, func(a, b summaryRow) int {
		switch {
		case a.sortKey < b.sortKey:
			return -1
		case a.sortKey > b.sortKey:
			return 1
		}
		return 0
	})
	return rows
}

// perSecond is n copies in s seconds as a rate, to three significant
// figures.
func perSecond(n int, s float64) string {
	if s <= 0 {
		return ""
	}
	v := float64(n) / s
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}
