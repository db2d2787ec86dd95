package archive

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// StartProgress prints "label: done / total  rate" to w five times a second
// until the returned function is called, which prints a last line. A nil w
// prints nothing.
func StartProgress(w io.Writer, label string, total int64, done *atomic.Int64) func() {
	if w == nil {
		return func() {}
	}
	start := time.Now()
	line := func(end string) {
		el := time.Since(start).Seconds()
		rate := 0.0
		if el > 0 {
			rate = float64(done.Load()) / el
		}
		fmt.Fprintf(w, "\r%s: %s / %s  %s/s  %.1fs   %s", label, human(done.Load()), human(total), human(int64(rate)), el, end)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				line("")
			case <-stop:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			line("\n")
		})
	}
}

// human formats a byte count with a binary unit.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), 0
	for f >= unit && u < 5 {
		f /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTPE"[u-1])
}
