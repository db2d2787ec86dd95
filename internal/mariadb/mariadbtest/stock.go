package mariadbtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/svcuser"
)

// Stock is a server started as the distribution's package starts it
// (StartStock): the stock server a user would otherwise run.
type Stock struct {
	Binary *mariadb.Binary
	// OptionFile is the package's option file it read, or "" for none.
	OptionFile string
	Socket     string
	Port       int
	// DB is a connection pool for root (no password) on Socket.
	DB *sql.DB
}

// StockOptionFile is the option file the package of bin starts its
// server with, or "" for none: Debian's MariaDB reads /etc/mysql/my.cnf
// (which includes conf.d/ and mariadb.conf.d/); Debian's MySQL server
// core ships none (mysql-server's mysqld.cnf sets only paths).
func StockOptionFile(bin *mariadb.Binary) string {
	if bin.Flavor == mariadb.MariaDB {
		if _, err := os.Stat("/etc/mysql/my.cnf"); err == nil {
			return "/etc/mysql/my.cnf"
		}
	}
	return ""
}

// StartStock starts the installed server as its package would, with the
// package's option file (StockOptionFile) or none, then extra options
// (a user's own configuration), on a private copy of an empty data
// directory, socket and port (and MySQL's X Protocol port and socket, and
// a secure_file_priv directory: MySQL's compiled one, /var/lib/mysql-files,
// is made by the package), as the servers' account; never pristine's
// options. t.Cleanup kills it.
func StartStock(t testing.TB, extra ...string) *Stock {
	t.Helper()
	data, bin := Datadir(t)
	acct, err := svcuser.Get()
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(filepath.Dir(data), "stock")
	files := filepath.Join(run, "files")
	for _, d := range []string{run, files} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := acct.Own(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s := &Stock{Binary: bin, OptionFile: StockOptionFile(bin), Socket: filepath.Join(run, "mysqld.sock")}
	defaults := "--no-defaults"
	if s.OptionFile != "" {
		defaults = "--defaults-file=" + s.OptionFile
	}
	if s.DB, err = sql.Open("mysql", dsn.Socket(s.Socket, "root", "", "")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.DB.Close() })
	// A free port can be taken between its pick and the server's bind
	// (another test's server, a client's outgoing connection): that
	// start is tried again on others.
	for try := 1; ; try++ {
		log, err := s.start(t, acct, data, run, files, defaults, extra)
		if err == nil {
			return s
		}
		if try < 3 && strings.Contains(string(log), "Address already in use") {
			t.Logf("stock server: a port was taken before it bound it, trying others: %v", err)
			continue
		}
		t.Fatalf("stock server: %v: %s", err, log)
	}
}

// start starts s's server once on free ports and waits until it answers;
// when it does not, it returns why and its error log.
func (s *Stock) start(t testing.TB, acct svcuser.Account, data, run, files, defaults string, extra []string) ([]byte, error) {
	t.Helper()
	var xport int
	var err error
	for _, p := range []*int{&s.Port, &xport} {
		if *p, err = mariadb.FreePortOn("127.0.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(run, "error.log")
	_ = os.Remove(logPath)
	args := append([]string{defaults, "--datadir=" + data, "--socket=" + s.Socket,
		"--port=" + strconv.Itoa(s.Port), "--bind-address=127.0.0.1", "--pid-file=" + filepath.Join(run, "mysqld.pid"),
		"--log-error=" + logPath, "--tmpdir=" + run, "--secure-file-priv=" + files,
		"--loose-mysqlx-port=" + strconv.Itoa(xport), "--loose-mysqlx-socket=" + filepath.Join(run, "mysqlx.sock")}, extra...)
	cmd := exec.Command(s.Binary.Path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: acct.Credential()}
	cmd.Dir = run
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = s.DB.PingContext(ctx)
		cancel()
		if err == nil {
			return nil, nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return log, fmt.Errorf("exited: %v", waitErr)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StockCharset is the default character set and collation ("utf8mb4
// utf8mb4_0900_ai_ci") of the stock server of bin, as its package
// configures it: what a template's server runs with when no option says
// otherwise (TestSlotIsStockServer compares the two servers live).
func StockCharset(bin *mariadb.Binary) string {
	switch {
	case bin.Flavor == mariadb.MySQL:
		return "utf8mb4 utf8mb4_0900_ai_ci"
	case bin.Major > 11 || bin.Major == 11 && bin.Minor >= 6:
		return "utf8mb4 utf8mb4_uca1400_ai_ci"
	default:
		return "utf8mb4 utf8mb4_general_ci"
	}
}
