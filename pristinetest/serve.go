package pristinetest

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/client"
)

// Daemon is a `pristine serve` started for one test by Serve.
type Daemon struct {
	Root   string         // the daemon's root, under /dev/shm
	Client *client.Client // over its unix socket
	Addr   string         // its loopback TCP address
	Token  string         // the bearer token TCP clients present
}

// Serve runs `bin serve` on a fresh root under /dev/shm, listening on the
// root's unix socket and on a loopback TCP port, until t ends; then it
// shuts the daemon down and removes the root. For tests of code that uses
// pristine where no daemon runs (CI). bin is the pristine binary.
func Serve(t testing.TB, bin string) *Daemon {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "pristine-clients-test-")
	if err != nil {
		t.Fatalf("pristinetest: make a root: %v", err)
	}
	// A root pristine runs its servers as the account pristine, which must
	// pass through this directory to the root inside.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatalf("pristinetest: make a root: %v", err)
	}
	d := &Daemon{Root: filepath.Join(dir, "root")}
	cmd := exec.Command(bin, "serve", "--root", d.Root, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("pristinetest: start %s serve: %v", bin, err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "pristine: serving http://"); ok {
				a, _, _ = strings.Cut(a, "/")
				addr <- a
			}
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.Client.Shutdown(ctx)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if k := killServersUnder(dir); len(k) > 0 {
			t.Errorf("pristinetest: servers left running after the daemon stopped: %v", k)
		}
		os.RemoveAll(dir)
	})
	select {
	case d.Addr = <-addr:
	case <-exited:
		t.Fatalf("pristinetest: %s serve exited at start", bin)
	case <-time.After(30 * time.Second):
		t.Fatalf("pristinetest: %s serve did not start within 30s", bin)
	}
	b, err := os.ReadFile(filepath.Join(d.Root, "token"))
	if err != nil {
		t.Fatalf("pristinetest: read the daemon's token: %v", err)
	}
	d.Token = strings.TrimSpace(string(b))
	d.Client = client.New(filepath.Join(d.Root, "pristine.sock"))
	return d
}

// killServersUnder kills the mariadbd (or mysqld) processes whose --datadir
// lies inside dir, the root Serve made, and returns their pids: servers the
// daemon should have stopped. It is the daemon's orphan sweep
// (internal/mariadb.KillOrphans) over the standard library only, so that
// importing pristinetest pulls in nothing of the daemon.
func killServersUnder(dir string) []int {
	prefix := "--datadir=" + filepath.Clean(dir) + string(filepath.Separator)
	var killed []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		if n := filepath.Base(args[0]); n != "mariadbd" && n != "mysqld" {
			continue
		}
		for _, a := range args[1:] {
			if strings.HasPrefix(a, prefix) {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed = append(killed, pid)
				}
				break
			}
		}
	}
	return killed
}
