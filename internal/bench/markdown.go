package bench

import (
	"fmt"
	"io"
	"strings"
)

// Label names a row's method as the tables print it.
func (row Row) Label() string {
	s := row.Method
	switch {
	case row.Method == MethodThin:
		s = fmt.Sprintf("thin %s, %d db/slot", row.Backend, row.DBsPerSlot)
	case row.Workers > 1:
		s += fmt.Sprintf(" x%d", row.Workers)
	}
	if row.EatMyData {
		s += " (eatmydata)"
	}
	return s
}

// Markdown writes a report's tables: the machine, one table per workload,
// and the service section. charts names the PNGs to link, if any.
func Markdown(w io.Writer, rep *Report, charts []string) error {
	m := rep.Machine
	fmt.Fprintf(w, "Machine: %s, %d cores, %.1f GiB, Linux %s, MariaDB %s; data on %s (default backend %s).\n",
		m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.Server, m.Filesystem, m.Backend)
	fmt.Fprintf(w, "Load average (1, 5, 15 min) before: %s, after: %s. Run of %s (UTC), %.0f s; budget per method and workload: %.0f s.\n\n",
		m.LoadBefore, m.LoadAfter, rep.Started.Format("2006-01-02 15:04"), rep.Seconds, rep.MaxTime)
	for _, wl := range rep.Workloads {
		fmt.Fprintf(w, "#### %s: %d tables, %.0f MB template, built from SQL in %.1f s\n\n", wl.Name, wl.Tables, wl.TemplateMB, wl.BuildSeconds)
		fmt.Fprintln(w, "| method | copies | time to N copies | copies/min | CPU s/copy | peak RSS | disk | vs serial dump\\|load | note |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---|")
		for _, row := range rep.Rows {
			if row.Workload == wl.Name {
				fmt.Fprintln(w, row.markdown())
			}
		}
		fmt.Fprintln(w)
	}
	if len(rep.Service) > 0 {
		serviceMarkdown(w, rep.Service)
	}
	for _, c := range charts {
		fmt.Fprintf(w, "![%s](%s)\n\n", strings.TrimSuffix(c[strings.LastIndexByte(c, '/')+1:], ".png"), c)
	}
	return nil
}

func (row Row) markdown() string {
	if row.Error != "" {
		return fmt.Sprintf("| %s | %d | failed | | | | | | %s |", row.Label(), row.Copies, escape(row.Error))
	}
	t := secs(row.Seconds)
	note := ""
	if row.LowerBound {
		t = "**projected, at least** " + t
		note = escape(row.Stopped)
	} else if row.Projected {
		t = "**projected** " + t
		note = fmt.Sprintf("projection: %d copies measured in %s; stopped: %s", row.Measured, secs(row.MeasuredSeconds), escape(abbrev(row.Stopped, 90)))
	}
	if row.SetupSeconds >= 0.05 && row.Method != MethodThin {
		note = strings.TrimPrefix(note+fmt.Sprintf("; setup %s included", secs(row.SetupSeconds)), "; ")
	}
	vs := ""
	switch {
	case row.Ratio > 0 && row.Ratio < 1:
		vs = fmt.Sprintf("%.1fx faster", 1/row.Ratio)
	case row.Method == MethodDumpLoad && row.Workers == 1 && !row.EatMyData:
		vs = "baseline"
	case row.Ratio >= 1:
		vs = fmt.Sprintf("%.2fx slower", row.Ratio)
	}
	cpu, rss, disk := fmt.Sprintf("%.2f", row.CPUPerCopy), fmt.Sprintf("%.0f MB", row.PeakRSSMB), fmt.Sprintf("%.0f MB", row.DiskMB)
	if row.Projected && row.PeakRSSMB == 0 {
		cpu, rss, disk = "n/a", "n/a", "n/a" // nothing ran at this count
	}
	return fmt.Sprintf("| %s | %d | %s | %.1f | %s | %s | %s | %s | %s |",
		row.Label(), row.Copies, t, row.CopiesPerMinute, cpu, rss, disk, vs, note)
}

func serviceMarkdown(w io.Writer, rows []ServiceRow) {
	fmt.Fprintln(w, "#### The service: through the daemon's API")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| template | slots | ready from the built template | from the SQL dump | dump\\|load, 1 copy | dump\\|load, same count | lease p50 / p99 | RSS per instance, mean / max | PSS per instance, mean | reset p99, every slot at once | single resets | reset p50 / p99 / max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range rows {
		if s.Error != "" {
			fmt.Fprintf(w, "| %s (x%g) | | failed: %s | | | | | | | | | |\n", s.Template, s.Scale, escape(s.Error))
			continue
		}
		lease, rss, pss, all, d1, dn := "", "", "", "", "", ""
		if s.Leases > 0 {
			lease = fmt.Sprintf("%.2f / %.2f ms", s.LeaseP50MS, s.LeaseP99MS)
			rss = fmt.Sprintf("%.1f / %.1f MB", s.RSSMeanMB, s.RSSMaxMB)
			pss = fmt.Sprintf("%.1f MB", s.PSSMeanMB)
			if s.PSSMeanMB == 0 {
				pss = "not measured" // a run saved before PSS was read
			}
		}
		up := secs(s.PoolUpSeconds)
		if len(s.Runs) > 1 {
			up += fmt.Sprintf(" (median of %d)", len(s.Runs))
			all = fmt.Sprintf("%.0f ms", s.AllResetP99MS)
		}
		if s.DumpLoad1Seconds > 0 {
			d1 = secs(s.DumpLoad1Seconds)
			dn = secs(s.DumpLoadNSeconds)
			if s.DumpLoadNProjected {
				dn = "**projected** " + dn
			}
		}
		slots := fmt.Sprint(s.Slots)
		if s.Limited != "" {
			slots += " (" + s.Limited + ")"
		}
		fmt.Fprintf(w, "| %.0f MB (demo x%g) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %.0f / %.0f / %.0f ms |\n",
			s.TemplateMB, s.Scale, slots, up, secs(s.FromSQLSeconds), d1, dn, lease, rss, pss, all, s.Resets, s.ResetP50MS, s.ResetP99MS, s.ResetMaxMS)
	}
	fmt.Fprintln(w)
	for _, s := range rows {
		if len(s.Runs) == 0 {
			continue
		}
		fmt.Fprintf(w, "Pool-ups of %d slots (%.0f MB template), each followed by a reset of every slot at once:\n\n", s.Slots, s.TemplateMB)
		fmt.Fprintln(w, "| run | state | ready | reset p50 / p99, every slot at once | load average before | after |")
		fmt.Fprintln(w, "|---:|---|---:|---:|---|---|")
		for i, r := range s.Runs {
			fmt.Fprintf(w, "| %d | %s | %s | %.0f / %.0f ms | %s | %s |\n", i+1, r.State, secs(r.PoolUpSeconds), r.ResetP50MS, r.ResetP99MS, r.LoadBefore, r.LoadAfter)
		}
		fmt.Fprintln(w)
	}
}

func secs(s float64) string {
	switch {
	case s >= 100:
		return fmt.Sprintf("%.0f s", s)
	case s >= 10:
		return fmt.Sprintf("%.1f s", s)
	default:
		return fmt.Sprintf("%.2f s", s)
	}
}

func escape(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }

func abbrev(s string, n int) string {
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
