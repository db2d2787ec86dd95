package archivebench

import (
	"fmt"
	"io"
)

// Markdown prints the report as a markdown table.
func Markdown(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "Data: %.2f GB in %d files. xbstream made by %s. Median of %d runs after a warm-up.\n\n", float64(r.DataBytes)/1e9, r.Files, r.XbstreamBy, r.Runs)
	fmt.Fprintln(w, "| step | wall s | user+sys s | GB/s | speed vs mbstream | CPU vs mbstream |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, x := range r.Rows {
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.2f | %.1fx | %.2f |\n", x.Name, x.Wall, x.CPU, x.GBps, x.VsMbWal, x.VsMbCPU)
	}
	fmt.Fprintf(w, "\npack | unpack through a pipe runs at %.0f%% of the throughput of cat | cat > /dev/null.\n", 100*r.PipeRatio)
	for _, n := range r.DiskNotes {
		fmt.Fprintf(w, "Disk: %s.\n", n)
	}
	if r.ReflinkNote != "" {
		fmt.Fprintf(w, "Reflink: %s.\n", r.ReflinkNote)
	}
	return nil
}
