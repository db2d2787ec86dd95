package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pristinedb/pristine/internal/stats"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/template"
)

// Machine describes where a run's figures come from.
type Machine struct {
	stats.Host        // CPU, cores, memory, kernel
	Server     string `json:"server"`
	Filesystem string `json:"filesystem"` // of the root's data directory
	Backend    string `json:"backend"`    // the store's default backend
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

// describeMachine reads the host (stats.ReadHost), the server and the
// filesystem of the store's data directory.
func describeMachine(store *template.Builder) Machine {
	m := Machine{Host: stats.ReadHost(), Server: store.Binary().Version, Backend: store.Catalog().Backend().Name(), LoadBefore: stats.LoadAverage()}
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
