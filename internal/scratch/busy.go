package scratch

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/internal/mountinfo"
)

// holder is a process that keeps a filesystem busy.
type holder struct {
	pid  int
	comm string
}

func (h holder) String() string { return fmt.Sprintf("%d (%s)", h.pid, h.comm) }

// holders returns the processes with an open file, a working directory, a
// root or a mapped file under dir.
func holders(dir string) []holder {
	under := func(p string) bool {
		p = strings.TrimSuffix(p, " (deleted)")
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []holder
	for _, proc := range procs {
		pid, err := strconv.Atoi(filepath.Base(proc))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if !holds(proc, under) {
			continue
		}
		comm, _ := os.ReadFile(proc + "/comm")
		out = append(out, holder{pid: pid, comm: strings.TrimSpace(string(comm))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// holds reports whether the process at proc uses a path that under accepts.
func holds(proc string, under func(string) bool) bool {
	for _, l := range []string{"cwd", "root", "exe"} {
		if t, err := os.Readlink(proc + "/" + l); err == nil && under(t) {
			return true
		}
	}
	fds, _ := os.ReadDir(proc + "/fd")
	for _, fd := range fds {
		if t, err := os.Readlink(proc + "/fd/" + fd.Name()); err == nil && under(t) {
			return true
		}
	}
	f, err := os.Open(proc + "/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if i := strings.Index(sc.Text(), " /"); i >= 0 && under(strings.TrimSpace(sc.Text()[i:])) {
			return true
		}
	}
	return false
}

// busyError explains which processes keep dir busy and how to stop them.
func busyError(dir string) error {
	hs := holders(dir)
	if len(hs) == 0 {
		return fmt.Errorf("%s is busy, but no process shows an open file there (a bind mount or a kernel user?); check with \"fuser -vm %s\" and retry", dir, dir)
	}
	names := make([]string, len(hs))
	pids := make([]string, len(hs))
	for i, h := range hs {
		names[i], pids[i] = h.String(), strconv.Itoa(h.pid)
	}
	return fmt.Errorf("%s is busy: pids %s hold files in it; stop them (pristine stops its own servers; otherwise \"kill %s\") and retry",
		dir, strings.Join(names, ", "), strings.Join(pids, " "))
}

// copyHolder is a process in another mount namespace where a copy of a
// mount of the scratch filesystem's device remains.
type copyHolder struct {
	holder
	point string // where the copy is mounted in that namespace
}

// mountedElsewhere returns a process of each mount namespace other than
// this process's that has one of devs ("/dev/loop3") mounted. Such a copy
// is made when a namespace is created (unshare, ip netns exec, a container
// runtime) while the filesystem is up, and where mounts are private an
// unmount here does not reach it: it keeps the filesystem, and so the
// loop device, until it is unmounted there or its processes exit.
func mountedElsewhere(devs []string) []copyHolder {
	self, _ := os.Readlink("/proc/self/ns/mnt")
	seen := map[string]bool{self: true}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []copyHolder
	for _, proc := range procs {
		ns, err := os.Readlink(proc + "/ns/mnt")
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		pid, err := strconv.Atoi(filepath.Base(proc))
		if err != nil {
			continue
		}
		ms, err := mountinfo.ReadPID(pid)
		if err != nil {
			continue // exited meanwhile
		}
		for _, m := range ms {
			if slices.Contains(devs, m.Source) {
				comm, _ := os.ReadFile(proc + "/comm")
				out = append(out, copyHolder{holder{pid, strings.TrimSpace(string(comm))}, m.Point})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// heldWarning says that the processes hs keep a copy of the scratch
// filesystem mounted, what that holds and how to let it go.
func heldWarning(hs []copyHolder) string {
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = h.String() + " at " + h.point
	}
	return fmt.Sprintf("processes in other mount namespaces still have the scratch filesystem mounted, "+
		"in copies made when their namespace was created, which an unmount here does not reach: %s; "+
		"its loop device and the deleted image's space are freed when they exit or unmount it (nsenter -t %d -m umount %s)",
		strings.Join(names, ", "), hs[0].pid, hs[0].point)
}
