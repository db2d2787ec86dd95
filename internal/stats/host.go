package stats

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/sysmem"
)

// Host names the machine a measurement ran on, as every report prints it
// beside its figures.
type Host struct {
	CPU       string  `json:"cpu"`
	Cores     int     `json:"cores"`
	MemoryGiB float64 `json:"memory_gib"`
	Kernel    string  `json:"kernel"`
}

// ReadHost reads the CPU model (/proc/cpuinfo), the cores Go may use, the
// machine's memory and the kernel's release; a field that cannot be read
// stays empty.
func ReadHost() Host {
	h := Host{Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if total, err := sysmem.Total(); err == nil {
		h.MemoryGiB = float64(total) / (1 << 30)
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return h
}

// String is the host as a sentence's part: "Intel(R) Xeon(R) Processor,
// 2 cores, 23.5 GiB, Linux 6.1.0".
func (h Host) String() string {
	cpu := h.CPU
	if cpu == "" {
		cpu = "an unnamed CPU"
	}
	return fmt.Sprintf("%s, %d cores, %.1f GiB, Linux %s", cpu, h.Cores, h.MemoryGiB, h.Kernel)
}
