package demorun

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/client"
)

// SlotCPU is the mean CPU time (user + system, in milliseconds) each
// slot's server has used so far, from /proc/PID/stat: read once every
// slot is ready and leased, it is what a slot's start, its readiness
// checks and its lease account cost the server, the figure that bounds
// how fast a pool comes up on few cores. Slots whose process is gone are
// left out; 0 when none could be read.
func SlotCPU(ctx context.Context, c *client.Client, name string) float64 {
	ps, err := c.Pool(ctx, name)
	if err != nil {
		return 0
	}
	var sum float64
	n := 0
	for _, s := range ps.Slots {
		if s.PID == 0 {
			continue
		}
		if ms, ok := procCPUms(s.PID); ok {
			sum += ms
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// procCPUms is the user + system CPU time of pid in milliseconds
// (/proc/PID/stat fields 14 and 15, in clock ticks of 10 ms).
func procCPUms(pid int) (float64, bool) {
	f, ok := procStat(pid)
	if !ok || len(f) < 13 {
		return 0, false
	}
	// utime is field 14, stime 15.
	u, err1 := strconv.ParseFloat(f[14-3], 64)
	s, err2 := strconv.ParseFloat(f[15-3], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 // ms per clock tick (USER_HZ 100)
	return (u + s) * tick, true
}

// procStat returns the fields of /proc/PID/stat from field 3 (state) on:
// field N is f[N-3]. The command name before them may hold spaces and
// parentheses, so the split starts after its last ')'.
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 || end+2 > len(b) {
		return nil, false
	}
	return strings.Fields(string(b[end+2:])), true
}
