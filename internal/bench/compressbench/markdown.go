package compressbench

import (
	"fmt"
	"io"

	"github.com/pristinedb/pristine/internal/units"
)

// Markdown writes the run as a table, each variant beside the first
// (the uncompressed one when run with the defaults).
func Markdown(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "Demo at scale %g, %d slots each written once (a 2,000-row table), soak of %g s with %d clients; %s, %d cores, %.1f GiB, Linux %s; %s.\n",
		rep.Scale, rep.Slots, rep.SoakSecs, rep.Clients, rep.Host.CPU, rep.Host.Cores, rep.Host.MemoryGiB, rep.Host.Kernel, rep.Server)
	fmt.Fprintf(w, "Load average (1, 5, 15 min) before: %s, after: %s.\n\n", rep.LoadBefore, rep.LoadAfter)
	fmt.Fprintln(w, "| variant | template logical | template physical | slots' own physical | RAM (image) | build | first slot | slots ready | reset p50 | soak copies/s |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var base *Result
	for i := range rep.Results {
		r := &rep.Results[i]
		if base == nil {
			base = r
		}
		fmt.Fprintf(w, "| %s | %s | %s%s | %s | %s%s | %.1f s%s | %.2f s%s | %.2f s%s | %.0f ms%s | %.1f%s |\n", r.Variant.Name,
			units.Bytes(r.TemplateLogical), units.Bytes(r.TemplatePhysical), ratio(r.TemplatePhysical, base.TemplatePhysical, r == base),
			units.Bytes(r.SlotsPhysical), units.Bytes(r.RAM), ratio(r.RAM, base.RAM, r == base),
			r.BuildSeconds, fratio(r.BuildSeconds, base.BuildSeconds, r == base), r.FirstSeconds, fratio(r.FirstSeconds, base.FirstSeconds, r == base), r.ReadySeconds, fratio(r.ReadySeconds, base.ReadySeconds, r == base),
			r.ResetP50MS, fratio(r.ResetP50MS, base.ResetP50MS, r == base), r.SoakPerSecond, fratio(r.SoakPerSecond, base.SoakPerSecond, r == base))
	}
	return nil
}

func ratio(n, base int64, self bool) string { return fratio(float64(n), float64(base), self) }

// fratio is " (0.62x)" of n against the first variant's; "" for that one.
func fratio(n, base float64, self bool) string {
	if self || base == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.2fx)", n/base)
}
