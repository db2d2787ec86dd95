package capture

import (
	"fmt"
	"io"
	"time"

	"github.com/pristinedb/pristine/internal/units"
)

// startProgress writes a live line with rows and bytes copied, their rates
// and an ETA against total (the tables' DATA_LENGTH, an estimate) until
// stop is called.
func startProgress(w io.Writer, n *counters, total int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
			}
			secs := time.Since(start).Seconds()
			rows, bytes := n.rows.Load(), n.bytes.Load()
			line := fmt.Sprintf("capture: %s, %d rows, %s/s, %.0f rows/s", units.Bytes(bytes), rows, units.Bytes(int64(float64(bytes)/secs)), float64(rows)/secs)
			if total > bytes && bytes > 0 {
				eta := time.Duration(float64(total-bytes) / (float64(bytes) / secs) * float64(time.Second))
				line += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
			}
			fmt.Fprintf(w, "\r\033[K%s", line)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
