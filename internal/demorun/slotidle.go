package demorun

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pristinedb/pristine/client"
)

// SlotIdle measures what the demo's start CPU (SlotCPU) also holds: the
// CPU a slot's server uses while it only waits, read twice over d on
// every slot (ready and leased, no queries), as milliseconds per second
// per slot, and the slots' mean age in seconds (from their process start,
// /proc/PID/stat field 22). A slot that came up early in a large pool has
// waited for the rest: MySQL 9.7's background threads wake about a hundred
// times a second, about 5 ms of CPU per second per idle server, so
// SlotCPU read after a 100 s pool-up holds several hundred milliseconds
// of waiting (docs/benchmarks.md, "The server matrix"). startCPU minus
// idle times age is the start's own share, near enough (the start itself
// is well under a second of the age). Zeros when nothing could be read.
func SlotIdle(ctx context.Context, c *client.Client, name string, d time.Duration) (idleMSPerSec, meanAgeSec float64) {
	ps, err := c.Pool(ctx, name)
	if err != nil {
		return 0, 0
	}
	var pids []int
	for _, s := range ps.Slots {
		if s.PID != 0 {
			pids = append(pids, s.PID)
		}
	}
	before := map[int]float64{}
	for _, pid := range pids {
		if ms, ok := procCPUms(pid); ok {
			before[pid] = ms
		}
	}
	up := uptimeSec() // the age when StartCPUMS was read, before this wait
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return 0, 0
	case <-time.After(d):
	}
	secs := time.Since(t0).Seconds()
	var idle, age float64
	n, na := 0, 0
	for pid, b := range before {
		if ms, ok := procCPUms(pid); ok {
			idle += (ms - b) / secs
			n++
		}
		if st, ok := procStartSec(pid); ok && up > 0 {
			age += up - st
			na++
		}
	}
	if n > 0 {
		idleMSPerSec = idle / float64(n)
	}
	if na > 0 {
		meanAgeSec = age / float64(na)
	}
	return idleMSPerSec, meanAgeSec
}

// procStartSec is when pid started, in seconds since boot (/proc/PID/stat
// field 22, in clock ticks).
func procStartSec(pid int) (float64, bool) {
	f, ok := procStat(pid)
	if !ok || len(f) < 22-2 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[22-3], 64)
	if err != nil {
		return 0, false
	}
	return v / 100, true // USER_HZ 100
}

// uptimeSec is the seconds since boot (/proc/uptime); 0 if unreadable.
func uptimeSec() float64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
