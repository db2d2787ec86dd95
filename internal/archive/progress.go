package archive

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pristinedb/pristine/internal/units"
)

// StartProgress prints "label: done / total  rate" (without "/ total" when
// total is 0, unknown) to w five times a second
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
		of := "" // a stream's size is not known in advance
		if total > 0 {
			of = " / " + units.Bytes(total)
		}
		fmt.Fprintf(w, "\r%s: %s%s  %s/s  %.1fs   %s", label, units.Bytes(done.Load()), of, units.Bytes(int64(rate)), el, end)
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
