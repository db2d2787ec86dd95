package buildbench

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

func numCPU() int { return runtime.NumCPU() }

// fsName names the filesystem holding dir.
func fsName(dir string) string {
	var sfs unix.Statfs_t
	if unix.Statfs(dir, &sfs) != nil {
		return "unknown"
	}
	switch sfs.Type {
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	}
	return fmt.Sprintf("0x%x", sfs.Type)
}

// Markdown prints the report as a table.
func Markdown(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "MariaDB %s, %d cores, template store on %s, stock data in %s; load average %s at the start, %s at the end. Medians of %d runs.\n\n",
		rep.Server, rep.Cores, rep.Store, rep.StockDir, rep.LoadStart, rep.Load, runsOf(rep))
	for _, s := range rep.Statements {
		fmt.Fprintf(w, "- %s\n", s)
	}
	fmt.Fprintln(w, "\n| workload | method | seconds | vs stock |")
	fmt.Fprintln(w, "|---|---|---:|---:|")
	for _, r := range rep.Results {
		ratio := "1.00x"
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		if _, err := fmt.Fprintf(w, "| %s | %s | %.2f | %s |\n", r.Workload, r.Method, r.Seconds, ratio); err != nil {
			return err
		}
	}
	return phaseTable(w, rep.Phases)
}

// phaseTable prints the in-RAM builds' timelines: one row per phase, one
// column per workload, medians in milliseconds.
func phaseTable(w io.Writer, rows []PhaseRow) error {
	if len(rows) == 0 {
		return nil
	}
	var wls, phases []string
	ms := map[[2]string]float64{}
	for _, r := range rows {
		if !slices.Contains(wls, r.Workload) {
			wls = append(wls, r.Workload)
		}
		if !slices.Contains(phases, r.Phase) {
			phases = append(phases, r.Phase)
		}
		ms[[2]string{r.Workload, r.Phase}] = r.Seconds * 1000
	}
	fmt.Fprintln(w, "\nWhere the in-RAM build and the first lease spend their time (medians per phase, ms):")
	fmt.Fprintf(w, "\n| phase | %s |\n|---|%s\n", strings.Join(wls, " | "), strings.Repeat("---:|", len(wls)))
	for _, ph := range phases {
		cells := make([]string, len(wls))
		for i, wl := range wls {
			cells[i] = "-"
			if v, ok := ms[[2]string{wl, ph}]; ok {
				cells[i] = fmt.Sprintf("%.0f", v)
			}
		}
		if _, err := fmt.Fprintf(w, "| %s | %s |\n", ph, strings.Join(cells, " | ")); err != nil {
			return err
		}
	}
	return nil
}

func runsOf(rep *Report) int {
	if len(rep.Results) == 0 {
		return 0
	}
	return len(rep.Results[0].Runs)
}
