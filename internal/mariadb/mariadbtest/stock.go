package mariadbtest

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	var xport int
	for _, p := range []*int{&s.Port, &xport} {
		if *p, err = mariadb.FreePortOn("127.0.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{defaults, "--datadir=" + data, "--socket=" + s.Socket,
		"--port=" + strconv.Itoa(s.Port), "--bind-address=127.0.0.1", "--pid-file=" + filepath.Join(run, "mysqld.pid"),
		"--log-error=" + filepath.Join(run, "error.log"), "--tmpdir=" + run, "--secure-file-priv=" + files,
		"--loose-mysqlx-port=" + strconv.Itoa(xport), "--loose-mysqlx-socket=" + filepath.Join(run, "mysqlx.sock")}, extra...)
	cmd := exec.Command(bin.Path, args...)
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
	if s.DB, err = sql.Open("mysql", dsn.Socket(s.Socket, "root", "", "")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.DB.Close() })
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = s.DB.PingContext(ctx)
		cancel()
		if err == nil {
			return s
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(run, "error.log"))
			t.Fatalf("stock server exited: %v: %s", waitErr, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("stock server not ready: %v", err)
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
