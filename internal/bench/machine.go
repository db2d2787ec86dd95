package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/sysmem"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/template"
)

// Machine describes where a run's figures come from.
type Machine struct {
	CPU        string  `json:"cpu"`
	Cores      int     `json:"cores"`
	MemoryGiB  float64 `json:"memory_gib"`
	Kernel     string  `json:"kernel"`
	Server     string  `json:"server"`
	Filesystem string  `json:"filesystem"` // of the root's data directory
	Backend    string  `json:"backend"`    // the store's default backend
	LoadBefore string  `json:"load_before"`
	LoadAfter  string  `json:"load_after"`
}

// describeMachine reads the CPU model, memory, kernel and the filesystem of
// the store's data directory.
func describeMachine(store *template.Builder) Machine {
	m := Machine{Cores: runtime.NumCPU(), Server: store.Binary().Version, Backend: store.Catalog().Backend().Name(), LoadBefore: stats.LoadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	total, _ := sysmem.Total()
	m.MemoryGiB = float64(total) / (1 << 30)
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	m.Filesystem = fsName(store.Catalog().Root().Data())
	return m
}

// fsName names the filesystem type of dir and, for a loop mount, says so.
func fsName(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return "unknown"
	}
	name := typeName(dir)
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return name
	}
	best, src := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		mp := f[4]
		if (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best = mp
			for i := 6; i < len(f)-2; i++ {
				if f[i] == "-" {
					src = f[i+2]
				}
			}
		}
	}
	if strings.HasPrefix(src, "/dev/loop") {
		img, _ := os.ReadFile("/sys/block/" + strings.TrimPrefix(src, "/dev/") + "/loop/backing_file")
		where := strings.TrimSpace(string(img))
		if where == "" {
			return name + " on " + src
		}
		return fmt.Sprintf("%s on %s, image %s on %s", name, src, where, typeName(filepath.Dir(where)))
	}
	return name
}

func typeName(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return "unknown"
	}
	names := map[int64]string{unix.BTRFS_SUPER_MAGIC: "btrfs", unix.XFS_SUPER_MAGIC: "xfs", unix.EXT4_SUPER_MAGIC: "ext4", unix.TMPFS_MAGIC: "tmpfs (RAM)"}
	if n, ok := names[int64(st.Type)]; ok {
		return n
	}
	return "another filesystem"
}
