package mariadb

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillOrphans kills server processes left over from an earlier pristine
// that was killed before it could stop them: any process whose command line
// carries --datadir= inside under (pristine's own root). It returns the pids
// it killed. Processes of other owners are never touched.
func KillOrphans(under string) []int {
	var killed []int
	for _, pid := range Servers(under) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	// Give the kernel a moment to tear them down so their files are released.
	for _, pid := range killed {
		for i := 0; i < 200 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return killed
}

// Servers lists the server processes whose --datadir lies inside under.
func Servers(under string) []int {
	prefix := "--datadir=" + filepath.Clean(under) + string(filepath.Separator)
	self := os.Getpid()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		if len(args) == 0 || !isServerName(filepath.Base(args[0])) {
			continue
		}
		for _, a := range args[1:] {
			if strings.HasPrefix(a, prefix) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func isServerName(n string) bool {
	return n == "mariadbd" || n == "mysqld"
}
