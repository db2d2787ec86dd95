package mariadb_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// syncChildEnv makes this test binary, started again, try each call the
// filter answers on a descriptor that is not open and exit: 0 when every
// call succeeded (the filter answered it), 1 when any failed.
const syncChildEnv = "PRISTINE_TEST_SYNC_CHILD"

func init() {
	if os.Getenv(syncChildEnv) == "" {
		return
	}
	const closed = 1 << 20 // no descriptor of this process
	var failed []string
	for name, call := range map[string]func() error{
		"fsync":           func() error { return unix.Fsync(closed) },
		"fdatasync":       func() error { return unix.Fdatasync(closed) },
		"syncfs":          func() error { return unix.Syncfs(closed) },
		"sync_file_range": func() error { return unix.SyncFileRange(closed, 0, 0, 0) },
	} {
		if err := call(); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
		}
	}
	if len(failed) > 0 {
		fmt.Println(strings.Join(failed, "; "))
		os.Exit(1)
	}
	os.Exit(0)
}

// TestServersStartWithoutFsync: a process started as a server is started
// makes no fsync, fdatasync, syncfs or sync_file_range (each answers
// success, even on a descriptor that is not open), while pristine's own
// threads keep theirs (the same fsync fails with EBADF here) and only the
// one thread that starts servers carries the filter. A real server
// started by Start runs under it.
func TestServersStartWithoutFsync(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), syncChildEnv+"=1")
	out, err := os.CreateTemp(t.TempDir(), "child")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := mariadb.StartNoSync(cmd); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	b, _ := os.ReadFile(out.Name())
	if ne := mariadb.NoSyncError(); ne != nil {
		t.Skipf("this machine refuses the seccomp filter, so servers make their fsyncs: %v", ne)
	}
	if err != nil {
		t.Fatalf("a process started as a server is started still ran its sync calls: %v: %s", err, b)
	}
	if err := unix.Fsync(1 << 20); !errors.Is(err, unix.EBADF) {
		t.Fatalf("fsync of a closed descriptor on the test's own thread gave %v, want EBADF: the filter reached pristine's threads", err)
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	filtered := 0
	for _, p := range tasks {
		s, _ := os.ReadFile(p)
		if strings.Contains(string(s), "\nSeccomp:\t2\n") {
			filtered++
		}
	}
	if filtered != 1 {
		t.Fatalf("%d of the test process's %d threads carry a seccomp filter, want exactly the one that starts servers", filtered, len(tasks))
	}

	in := mariadbtest.Start(t)
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", in.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s), "\nSeccomp:\t2\n") || !strings.Contains(string(s), "\nNoNewPrivs:\t1\n") {
		t.Fatalf("the server started by Start (pid %d) runs without the filter; its status:\n%s", in.PID(), s)
	}
}
