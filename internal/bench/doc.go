package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Document writes a page of saved runs' method comparisons (Runs) under a
// title, and the slot start's tables (SlotStartFile) after them:
// `pristine-bench bench --render`.
func Document(w io.Writer, reps []*Report, paths []string) error {
	fmt.Fprint(w, "# Benchmarks\n\n")
	if err := Runs(w, reps, paths); err != nil {
		return err
	}
	if len(paths) > 0 {
		// The start profile is measured by gated Go tests, not by a bench
		// run; its tables are kept beside the runs' results and copied in.
		b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(paths[0])), SlotStartFile))
		if err == nil {
			fmt.Fprintf(w, "%s\n", strings.TrimRight(string(b), "\n"))
		}
	}
	return nil
}

// Runs writes the method comparison of docs/benchmarks.md from saved runs
// (its bench-runs block, rewritten by scripts/bench.sh): for each, its
// machine, the headline comparisons computed from its rows, its tables and
// charts. paths are the runs' bench.json files, relative to the repository;
// charts are linked relative to docs/.
func Runs(w io.Writer, reps []*Report, paths []string) error {
	fmt.Fprint(w, `Every figure of this section comes from a run of `+"`pristine-bench bench`"+`,
saved under docs/bench/ and rendered here by `+"`bash scripts/bench.sh`"+`; `+"`go test ./docs/`"+`
fails when it is edited by hand. Time is wall time from a built template to N
usable copies, one-time setup included (starting the source server, mydumper's dump,
the export of IMPORT); CPU is the CPU time of pristine, every child it ran and
every server it started; peak RSS is the largest sum of the resident memory of
those processes; disk is the growth of the used space of the filesystem
(btrfs returns the space of the previous method's copies in the background,
so a negative disk figure is that, not a measurement of the row).

**Projections.** Methods that would run past their time budget stop; their
rows say **projected**, and the time is the method's setup plus its measured
time per copy times N. Every such row names how many copies were measured
and how long they took; "at least" marks a method whose first copies did
not finish in twice the budget, whose time is then a lower bound. Rows
without the word were measured in full.

**Backends.** "thin btrfs" clones a slot with a subvolume snapshot, "thin
reflink" with FICLONE per file, "thin copy" with the copy backend, which uses
copy_file_range: on btrfs and XFS the kernel may serve that by sharing
extents, so the copy rows there show what that backend costs on those
filesystems, not a byte-for-byte copy (the disk column tells which). The XFS
run is a separate invocation on a fresh scratch filesystem.

Other benchmarks: template capture from a live server against mariadb-dump,
mydumper and mariadb-backup is in [capture.md](capture.md) (`+"`pristine-bench bench --capture`"+`,
the same as `+"`pristine-bench bench-capture`"+`); pack and unpack against mbstream
are measured by `+"`pristine-bench bench --archive`"+` (`+"`pristine-bench bench-archive`"+`), see
[archive-format.md](archive-format.md).

`)
	for i, rep := range reps {
		dir := strings.TrimPrefix(filepath.Dir(paths[i]), "docs/")
		fmt.Fprintf(w, "### Run %d: data on %s\n\n", i+1, rep.Machine.Filesystem)
		for _, wl := range rep.Workloads {
			if wl.Tables > 51 && wl.Tables != 30000 {
				fmt.Fprintf(w, "The many-table workload of this run has %d tables, not 30,000 (`MANY_TABLES` of scripts/bench.sh).\n\n", wl.Tables)
			}
		}
		headlines(w, rep)
		files, err := chartsOf(rep)
		if err != nil {
			return err
		}
		for j := range files {
			files[j] = dir + "/" + files[j]
		}
		if err := Markdown(w, rep, files); err != nil {
			return err
		}
		fmt.Fprintf(w, "Raw results: [%s](%s).\n\n", filepath.Base(paths[i]), dir+"/"+filepath.Base(paths[i]))
	}
	return nil
}

// SlotStartFile, in the directory above the runs' results (docs/bench),
// holds the section "Where a slot's start goes": the tables of
// TestMeasureSlotStart and TestMeasurePoolUp (internal/pool), which
// Document copies to the end of the page.
const SlotStartFile = "slot-start.md"

// chartsOf names the charts Save drew for rep.
func chartsOf(rep *Report) ([]string, error) {
	var out []string
	for _, wl := range rep.Workloads {
		out = append(out, "copies-"+wl.Name+".png")
	}
	for _, s := range rep.Service {
		if s.Error == "" && s.Resets > 0 {
			out = append(out, "reset.png")
			break
		}
	}
	return out, nil
}

// headlines prints the comparisons the project's goals name, computed
// from the rows: the best thin method against serial dump|load and against
// every other method at each N, and time per copy against table count.
func headlines(w io.Writer, rep *Report) {
	var lines []string
	for _, wl := range rep.Workloads {
		counts := map[int]bool{}
		for _, r := range rep.Rows {
			if r.Workload == wl.Name && r.Error == "" {
				counts[r.Copies] = true
			}
		}
		for _, n := range sortedKeys(counts) {
			thin, other, base := best(rep.Rows, wl.Name, n)
			if thin == nil {
				continue
			}
			s := fmt.Sprintf("- %s, %s: fastest pristine slots (%s) %s", wl.Name, plural(n, "copy", "copies"), thin.Label(), secs(thin.Seconds))
			if base != nil {
				atLeast := ""
				if base.LowerBound {
					atLeast = "at least "
				}
				s += fmt.Sprintf("; serial dump|load %s%s: **%s%.0fx faster**", proj(base), secs(base.Seconds), atLeast, base.Seconds/thin.Seconds)
			}
			if other != nil {
				verdict := "faster than"
				if other.Seconds < thin.Seconds {
					verdict = "**slower** than"
				}
				s += fmt.Sprintf("; %s the best other method, %s (%s%s)", verdict, other.Label(), proj(other), secs(other.Seconds))
			}
			lines = append(lines, s+".")
		}
	}
	many := WorkloadInfo{}
	for _, wl := range rep.Workloads {
		if wl.Tables > many.Tables {
			many = wl
		}
	}
	if many.Tables > 51 {
		if a, b := sameVariant(rep.Rows, "demo", many.Name); a != nil {
			pa, pb := a.Seconds/float64(a.Copies), b.Seconds/float64(b.Copies)
			lines = append(lines, fmt.Sprintf("- Time per copy with pristine slots (%s, %d copies, both measured): %.3f s for 51 tables, %.3f s for %d tables (%.2fx).",
				a.Label(), a.Copies, pa, pb, many.Tables, pb/pa))
		}
	}
	for _, s := range rep.Service {
		if s.Error == "" && s.Resets > 0 {
			lines = append(lines, fmt.Sprintf("- Reset of a released slot, %.0f MB template: p50 %.0f ms, p99 %.0f ms (%d single resets of an idle pool).", s.TemplateMB, s.ResetP50MS, s.ResetP99MS, s.Resets))
		}
		if s.Error == "" && s.Leases > 0 {
			pss := fmt.Sprintf(", %.1f MB with the shared code divided among instances (PSS)", s.PSSMeanMB)
			if s.PSSMeanMB == 0 {
				pss = "" // a run saved before PSS was read
			}
			lines = append(lines, fmt.Sprintf("- Lease of a ready slot through the daemon: p50 %.2f ms, p99 %.2f ms over %d leases; %.1f MB resident per instance (RSS, mean)%s.", s.LeaseP50MS, s.LeaseP99MS, s.Leases, s.RSSMeanMB, pss))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, strings.Join(lines, "\n"))
		fmt.Fprintln(w)
	}
}

// best returns, for one workload and copy count, the fastest thin row, the
// fastest row of any other method, and serial dump|load.
func best(rows []Row, workload string, n int) (thin, other, base *Row) {
	for i := range rows {
		r := &rows[i]
		if r.Workload != workload || r.Copies != n || r.Error != "" || r.Seconds <= 0 {
			continue
		}
		switch {
		case r.Method == MethodThin:
			if r.Projected {
				continue // headlines compare measured slots only
			}
			if thin == nil || r.Seconds < thin.Seconds {
				thin = r
			}
		default:
			if r.Method == MethodDumpLoad && r.Workers == 1 && !r.EatMyData {
				base = r
			}
			if other == nil || r.Seconds < other.Seconds {
				other = r
			}
		}
	}
	return thin, other, base
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func proj(r *Row) string {
	if r.LowerBound {
		return "projected at least "
	}
	if r.Projected {
		return "projected "
	}
	return ""
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// sameVariant finds the fastest thin variant (backend, databases per slot)
// measured at the same, largest, copy count on both workloads.
func sameVariant(rows []Row, w1, w2 string) (a, b *Row) {
	for i := range rows {
		x := &rows[i]
		if x.Workload != w1 || x.Method != MethodThin || x.Projected || x.Error != "" {
			continue
		}
		for j := range rows {
			y := &rows[j]
			if y.Workload == w2 && y.Method == MethodThin && !y.Projected && y.Error == "" &&
				y.Backend == x.Backend && y.DBsPerSlot == x.DBsPerSlot && y.Copies == x.Copies {
				if a == nil || x.Copies > a.Copies || (x.Copies == a.Copies && x.Seconds < a.Seconds) {
					a, b = x, y
				}
			}
		}
	}
	return a, b
}
