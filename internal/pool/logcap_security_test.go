package pool_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// floodLogins makes n login attempts with a wrong password on a slot's
// TCP port, as any peer that reaches the port can, 8 at a time, as 16
// users that do not exist: MySQL answers each unknown user as if it had
// an authentication plugin drawn at random for its name, so 16 names
// meet every plugin it draws from.
func floodLogins(t *testing.T, host string, port, n int) {
	t.Helper()
	const users = 16
	var conns [users]driver.Connector
	for u := range conns {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net = "nobody"+strconv.Itoa(u), "wrong", "tcp"
		cfg.Addr = host + ":" + strconv.Itoa(port)
		cfg.TLSConfig = "preferred"
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		conns[u] = c
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var odd error
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				c, err := conns[i%users].Connect(context.Background())
				if err == nil {
					c.Close()
					err = errors.New("a login with a wrong password succeeded")
				}
				var me *mysql.MySQLError
				if !errors.As(err, &me) || me.Number != 1045 {
					mu.Lock()
					odd = err
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	if odd != nil {
		t.Fatalf("a login attempt did not fail with access denied (1045): %v", odd)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestSecurityLoginFloodNotLogged: 2,000 failed logins from a peer with no
// account (docs/security.md, "Logs are capped") leave the slot's error
// log as it was, give or take a line: the servers log errors, not
// refused logins.
func TestSecurityLoginFloodNotLogged(t *testing.T) {
	_, _, _, l := securityPool(t)
	path := filepath.Join(filepath.Dir(l.Socket), "error.log")
	before := fileSize(t, path)
	floodLogins(t, l.Host, l.Port, 2000)
	grew := fileSize(t, path) - before
	if grew > 4<<10 {
		b, _ := os.ReadFile(path)
		t.Fatalf("2000 failed logins grew the slot's error log by %d bytes (at most 4096 allowed); it ends:\n%s", grew, lastBytes(b, 600))
	}
	t.Logf("2000 failed logins grew the error log by %d bytes", grew)
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// TestSecurityErrorLogCapped: a slot's error log that grows past its cap
// (1 MiB) is cut by the daemon to its last part, which still ends with
// the server's last line, within a pass of its janitor; the server
// appends to it (O_APPEND), so what it writes next lands at the new end.
func TestSecurityErrorLogCapped(t *testing.T) {
	_, _, _, l := securityPool(t)
	path := filepath.Join(filepath.Dir(l.Socket), "error.log")
	if !serverAppends(t, serverPID(t, l), path) {
		t.Fatalf("the slot's server does not open %s with O_APPEND: cutting it would leave a hole the size of what was cut", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 99) + "\n"
	noise := []byte(strings.Repeat(line, 3<<20/len(line)))
	if _, err := f.Write(append(noise, "the last line\n"...)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The cut truncates the log, then writes the note and the tail: wait
	// for a cut log that ends with the last line, not for a moment
	// between the two.
	var b []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		if len(b) <= 1<<20 && strings.HasSuffix(string(b), "the last line\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the slot's error log passed its cap of %d, it is %d bytes and ends:\n%s", 1<<20, len(b), lastBytes(b, 300))
		}
	}
	if !strings.Contains(string(b), "[pristine] ") {
		t.Fatalf("the cut error log (%d bytes) has no note of the cut; it ends:\n%s", len(b), lastBytes(b, 300))
	}
}

// serverAppends reports whether process pid has path open with O_APPEND.
func serverAppends(t *testing.T, pid int, path string) bool {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if target, _ := os.Readlink(filepath.Join(dir, e.Name())); target != path {
			continue
		}
		info, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(ln, "flags:"); ok {
				flags, _ := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
				if flags&02000 == 0 {
					return false
				}
			}
		}
		return true
	}
	t.Fatalf("process %d has no descriptor of %s", pid, path)
	return false
}
