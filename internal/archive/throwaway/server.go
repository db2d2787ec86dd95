// Package throwaway starts a short-lived mariadbd on a fresh data directory,
// for the archive tests and the bench-archive command: initialise with
// mariadb-install-db, start, run SQL through the mariadb client, stop
// cleanly so the data directory is consistent on disk.
package throwaway

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/svcuser"
)

// Server is a running throwaway mariadbd.
type Server struct {
	Datadir string
	Socket  string
	cmd     *exec.Cmd
	done    chan error
}

// Available reports why a throwaway server cannot run here, or "".
func Available() string {
	for _, b := range []string{"mariadb-install-db", "mariadbd", "mariadb", "mariadb-admin"} {
		if _, err := exec.LookPath(b); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", b)); err != nil {
				return b + " is not installed"
			}
		}
	}
	return ""
}

func bin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return filepath.Join("/usr/sbin", name)
}

// Start initialises datadir unless it already holds a data directory, and
// starts mariadbd on
// it with its socket in runDir. Settings favour speed over durability.
func Start(ctx context.Context, datadir, runDir string) (*Server, error) {
	// Like every server pristine starts, it runs as the servers' account
	// (never root), and its root account without a password is reachable
	// only on a socket in a directory nobody else may enter.
	acct, err := svcuser.Get()
	if err != nil {
		return nil, err
	}
	// runDir is also the servers' tmpdir: a server starting up removes the
	// #sql files of its tmpdir, other servers' temporary tables among them.
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, err
	}
	if err := acct.Own(runDir, 0o700); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(datadir, "mysql")); err == nil {
		// Already initialised (a copy): start it as it is, once it is the
		// servers' account's.
		if err := acct.OwnTree(datadir); err != nil {
			return nil, err
		}
	} else {
		if err := os.Mkdir(datadir, 0o700); err != nil && !os.IsExist(err) {
			return nil, err
		}
		if err := acct.Own(datadir, 0o700); err != nil {
			return nil, err
		}
		install := exec.CommandContext(ctx, bin("mariadb-install-db"), "--no-defaults", "--datadir="+datadir,
			"--tmpdir="+runDir, "--auth-root-authentication-method=normal", "--skip-test-db",
			// A machine whose host name does not resolve (a fresh chroot) is fine.
			"--skip-name-resolve", "--force")
		install.SysProcAttr = &syscall.SysProcAttr{Credential: acct.Credential()}
		install.Dir = "/"
		if out, err := install.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("mariadb-install-db: %w: %s", err, tail(out))
		}
	}
	if err := acct.CheckReachable(datadir); err != nil {
		return nil, err
	}
	s := &Server{Datadir: datadir, Socket: filepath.Join(runDir, "m.sock"), done: make(chan error, 1)}
	args := []string{"--no-defaults", "--datadir=" + datadir, "--tmpdir=" + runDir, "--socket=" + s.Socket, "--skip-networking",
		"--pid-file=" + filepath.Join(runDir, "m.pid"), "--log-error=" + filepath.Join(runDir, "m.err"),
		"--innodb-flush-method=nosync", "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
		"--skip-log-bin", "--innodb-buffer-pool-size=256M", "--innodb-use-native-aio=0",
		"--secure-file-priv=" + runDir, "--loose-skip-symbolic-links"}
	s.cmd = exec.Command(bin("mariadbd"), args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: acct.Credential()}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := s.Query(ctx, "SELECT 1"); err == nil {
			return s, nil
		}
		select {
		case err := <-s.done:
			log, _ := os.ReadFile(filepath.Join(runDir, "m.err"))
			return nil, fmt.Errorf("mariadbd exited during start (%v): %s", err, tail(log))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return nil, fmt.Errorf("mariadbd did not answer within 60s")
		}
	}
}

// Query runs SQL with the mariadb client and returns its tab-separated
// output without column names.
func (s *Server) Query(ctx context.Context, sql string) (string, error) {
	cmd := exec.CommandContext(ctx, bin("mariadb"), "--no-defaults", "-S", s.Socket, "-uroot", "-N", "-B", "-e", sql)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mariadb: %w: %s", err, tail(errb.Bytes()))
	}
	return string(bytes.TrimSpace(out.Bytes())), nil
}

// Stop shuts the server down cleanly and waits for it to exit.
func (s *Server) Stop(ctx context.Context) error {
	if s.cmd == nil {
		return nil
	}
	out, err := exec.CommandContext(ctx, bin("mariadb-admin"), "--no-defaults", "-S", s.Socket, "-uroot", "shutdown").CombinedOutput()
	if err != nil {
		s.Kill()
		return fmt.Errorf("mariadb-admin shutdown: %w: %s", err, tail(out))
	}
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.Kill()
		return fmt.Errorf("mariadbd did not stop within 60s")
	}
	s.cmd = nil
	return nil
}

// Kill stops the server at once (for cleanup after failures).
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

func tail(b []byte) string {
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(bytes.TrimSpace(b))
}
