package capturebench

import (
	"fmt"
	"io"
	"runtime"
	"strings"
)

func numCPU() int { return runtime.NumCPU() }

// Markdown prints the report as a table.
func Markdown(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "%d cores, load average at the end %s. Pristine's times are whole template builds (capture, start, lease account, clean slow shutdown).\n\n", rep.Cores, rep.Load)
	fmt.Fprintln(w, "| dataset | method | seconds | speed-up |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	for _, r := range rep.Results {
		ratio := "baseline"
		if r.Baseline != "" {
			ratio = fmt.Sprintf("%.2fx vs %s", r.Ratio, cell(r.Baseline))
		}
		if _, err := fmt.Fprintf(w, "| %s | %s | %.2f | %s |\n", r.Dataset, cell(r.Method), r.Seconds, ratio); err != nil {
			return err
		}
	}
	return nil
}

// cell escapes the pipes of a method name for a markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
