package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat CPU times; 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuSelfAndChildren is the CPU time of this process and of every child it
// has reaped, in seconds.
func cpuSelfAndChildren() float64 {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// procCPU is the CPU time a live process has used, in seconds, from
// /proc/<pid>/stat; 0 when it is gone.
func procCPU(pid int) float64 {
	f := procStat(pid)
	if len(f) < 15 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[13], 64)
	s, _ := strconv.ParseFloat(f[14], 64)
	return (u + s) / clockTicks
}

// procStat returns the fields of /proc/<pid>/stat after the command name.
// Field i of proc(5) (1-based) is at index i-1.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	head := strings.Fields(s[:strings.IndexByte(s, '(')])
	return append(append(head, "comm"), strings.Fields(s[i+1:])...)
}

// cpuMeter measures the CPU a method uses: what this process and its reaped
// children used since it started, plus what the live servers it is told
// about used since it first saw them.
type cpuMeter struct {
	start float64
	base  map[int]float64 // live server pid -> CPU when first seen
}

func newCPUMeter() *cpuMeter { return &cpuMeter{start: cpuSelfAndChildren(), base: map[int]float64{}} }

// watch records the CPU a live server has used so far; only what it uses
// from now on counts.
func (m *cpuMeter) watch(pid int) { m.base[pid] = procCPU(pid) }

// seconds is the CPU used so far by this process, reaped children, and the
// live servers named (their whole life unless watched earlier).
func (m *cpuMeter) seconds(live []int) float64 {
	total := cpuSelfAndChildren() - m.start
	for _, pid := range live {
		total += procCPU(pid) - m.base[pid]
	}
	return total
}

// rssSampler tracks the peak resident memory of every descendant of this
// process (servers, clients, loaders), sampled four times a second.
type rssSampler struct {
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

func startRSS() *rssSampler {
	r := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	r.sample()
	go func() {
		defer close(r.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.sample()
			}
		}
	}()
	return r
}

func (r *rssSampler) sample() {
	n := descendantsRSS(os.Getpid())
	r.mu.Lock()
	r.peak = max(r.peak, n)
	r.mu.Unlock()
}

// Peak is the largest sum seen so far, in bytes; it takes a sample first.
func (r *rssSampler) Peak() int64 {
	r.sample()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak
}

func (r *rssSampler) Stop() { close(r.stop); <-r.done }

// descendantsRSS sums the resident memory of every descendant of pid.
func descendantsRSS(pid int) int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	parent := map[int]int{}
	rss := map[int]int64{}
	page := int64(os.Getpagesize())
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := procStat(p)
		if len(f) < 24 {
			continue
		}
		pp, _ := strconv.Atoi(f[3])
		pages, _ := strconv.ParseInt(f[23], 10, 64)
		parent[p], rss[p] = pp, pages*page
	}
	var sum int64
	for p := range parent {
		for q, hops := parent[p], 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == pid {
				sum += rss[p]
				break
			}
		}
	}
	return sum
}

// usedBytes is the space in use on the filesystem holding dir, after
// committing it (btrfs reports space only once its transaction commits).
func usedBytes(dir string) int64 {
	if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
		_ = unix.Syncfs(fd)
		unix.Close(fd)
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// freeBytes is the space still free on the filesystem holding dir.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Bavail) * st.Bsize
}

// dirBytes is the space a tree takes on disk (allocated blocks).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}
