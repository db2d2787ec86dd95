package demorun

import (
	"fmt"
	"io"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// WriteText writes the demo's result as `pristine demo` prints it: the
// server, backend and cores, the table of steps beside the dump|load
// baseline, every run with its load average. It reads nothing but r, so
// a saved run renders the same text on any machine (the README's sample).
func WriteText(w io.Writer, r *DemoResult) {
	f := mariadb.FlavorOf(r.Server)
	server, baseline := f.Name(), f.Client("mariadb-dump")+" \\| "+f.Client("mariadb")
	fmt.Fprintf(w, "\npristine demo: %s %s, %s backend, %d cores\n\n", server, r.Server, r.Backend, r.Machine.Cores)
	fmt.Fprintf(w, "| step | pristine | %s | ratio |\n|---|---|---|---|\n", baseline)
	built := "built"
	if !r.TemplateBuilt {
		built = "cached; first build took"
	}
	fmt.Fprintf(w, "| demo template (51 tables, %.0f MB on disk) | %s %.2f s | | |\n", float64(r.TemplateBytes)/(1<<20), built, r.TemplateSeconds)
	base, ratio := "not run", ""
	if r.DumpLoadSeconds > 0 {
		base = fmt.Sprintf("%.0f s (1 copy measured: %.2f s, x %d)", r.DumpLoad200Proj, r.DumpLoadSeconds, r.Slots)
		ratio = fmt.Sprintf("%.0fx", r.SpeedupVsDumpLd)
	}
	fmt.Fprintf(w, "| %d slots ready, every slot answered (median of %d) | %.2f s | %s | %s |\n", r.Slots, len(r.Runs), r.PoolUpSeconds, base, ratio)
	if r.FirstLeaseSeconds > 0 {
		fmt.Fprintf(w, "| first lease, asked for with the pool-up (median of %d) | %.2f s | | |\n", len(r.Runs), r.FirstLeaseSeconds)
	}
	fmt.Fprintf(w, "| from the SQL dump to %d slots | %.2f s | | |\n", r.Slots, r.FromSQLSeconds)
	fmt.Fprintf(w, "| lease of a ready slot, p50 / p99 | %.2f / %.2f ms | | |\n", r.LeaseP50MS, r.LeaseP99MS)
	once := ""
	if r.DumpLoadSeconds > 0 {
		once = fmt.Sprintf("%.2f s", r.DumpLoadSeconds)
	}
	fmt.Fprintf(w, "| reset of a released slot, all %d at once, p50 / p99 (median of %d) | %.0f / %.0f ms | %s | |\n", r.Slots, len(r.Runs), r.ResetP50MS, r.ResetP99MS, once)
	fmt.Fprintf(w, "| resident memory per slot (RSS), mean / max | %.1f / %.1f MB | | |\n", r.RSSMeanMB, r.RSSMaxMB)
	fmt.Fprintf(w, "| memory per slot with the shared code divided among slots (PSS), mean | %.1f MB | | |\n", r.PSSMeanMB)
	fmt.Fprintf(w, "| server CPU per slot, from exec to ready and leased (user + system), mean | %.0f ms | | |\n", r.StartCPUMS)
	if r.SlotAgeSec > 0 {
		fmt.Fprintf(w, "| of which waiting for the rest of the pool: idle CPU per slot x mean slot age | %.1f ms/s x %.0f s = %.0f ms | start alone: %.0f ms | |\n",
			r.IdleCPUMSPerSec, r.SlotAgeSec, r.IdleCPUMSPerSec*r.SlotAgeSec, max(r.StartCPUMS-r.IdleCPUMSPerSec*r.SlotAgeSec, 0))
	}
	fmt.Fprintf(w, "| first query on a leased slot (%d rows counted) | %.2f ms | | |\n", r.RowsInFirstTable, r.QueryMS)
	if r.FirstLeaseSeconds > 0 {
		fmt.Fprintf(w, "\n| run | state | first lease | %d slots ready | reset p50 / p99 | load average before | after |\n|---:|---|---:|---:|---:|---|---|\n", r.Slots)
		for i, run := range r.Runs {
			fmt.Fprintf(w, "| %d | %s | %.2f s | %.2f s | %.0f / %.0f ms | %s | %s |\n", i+1, run.State, run.FirstLeaseSeconds, run.PoolUpSeconds, run.ResetP50MS, run.ResetP99MS, run.LoadBefore, run.LoadAfter)
		}
	} else { // a run saved before the first lease was measured
		fmt.Fprintf(w, "\n| run | state | %d slots ready | reset p50 / p99 | load average before | after |\n|---:|---|---:|---:|---|---|\n", r.Slots)
		for i, run := range r.Runs {
			fmt.Fprintf(w, "| %d | %s | %.2f s | %.0f / %.0f ms | %s | %s |\n", i+1, run.State, run.PoolUpSeconds, run.ResetP50MS, run.ResetP99MS, run.LoadBefore, run.LoadAfter)
		}
	}
	fmt.Fprintf(w, "\nLoad average (1, 5, 15 min) before the demo: %s, after: %s (%d cores).\n", r.LoadBefore, r.LoadAfter, r.Machine.Cores)
}
