package overheadbench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// selfCPU is the user + system time of every thread of this process so
// far: the daemon, its client and the bare starter all run in it.
func selfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the time every thread of process pid has run so far, from
// /proc/PID/task/*/schedstat (nanoseconds, not clock ticks); 0 when the
// process is gone.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			sum += time.Duration(ns)
		}
	}
	return sum
}
