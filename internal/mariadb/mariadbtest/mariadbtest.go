// Package mariadbtest starts throwaway MariaDB servers for tests, through the
// same code that pristine uses for its slots.
package mariadbtest

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/svcuser"
)

var (
	baseOnce sync.Once
	baseDir  string
	baseBin  *mariadb.Binary
	baseErr  error
)

// Binary returns the installed server binary, or skips the test with the
// reason when there is none.
func Binary(t testing.TB) *mariadb.Binary {
	t.Helper()
	b, err := mariadb.FindBinary(context.Background())
	if err != nil {
		noServer(t, err)
	}
	return b
}

// SkipOnMySQL skips a test of a guarantee that has no MySQL flavour yet,
// saying which (why, with the issue that tracks it), when the installed
// server is MySQL: the server matrix (docs/servers.md) lists each.
func SkipOnMySQL(t testing.TB, why string) {
	t.Helper()
	if Binary(t).Flavor == mariadb.MySQL {
		t.Skipf("not on MySQL yet: %s", why)
	}
}

// noServer skips a test that has no server to run against, or fails it in
// the server matrix (scripts/servers.sh sets PRISTINE_SERVER_MATRIX),
// where a missing server is the failure.
func noServer(t testing.TB, err error) {
	t.Helper()
	if m := os.Getenv("PRISTINE_SERVER_MATRIX"); m != "" {
		t.Fatalf("server matrix %s: no database server to test against: %v", m, err)
	}
	t.Skipf("no database server to test against: %v", err)
}

// base initialises one empty data directory per test process; every Start
// copies it, which is much cheaper than initialising again.
func base(t testing.TB) (string, *mariadb.Binary) {
	baseOnce.Do(func() {
		baseBin, baseErr = mariadb.FindBinary(context.Background())
		if baseErr != nil {
			return
		}
		// One base per server version, shared by every test process and
		// made once: built aside, then renamed into place.
		key := strings.NewReplacer("/", "_", "+", "_", "~", "_").Replace(baseBin.Version)
		// v2: owned by the servers' account (internal/svcuser).
		final := filepath.Join(tmpBase(), "pristine-test-base-v2-"+key)
		baseDir = filepath.Join(final, "data")
		if _, err := os.Stat(filepath.Join(final, "ready")); err == nil {
			return
		}
		tmp, err := TempDir(tmpBase(), "pristine-test-base-tmp-")
		if err != nil {
			baseErr = err
			return
		}
		if baseErr = baseBin.InitDatadir(context.Background(), filepath.Join(tmp, "data")); baseErr != nil {
			os.RemoveAll(tmp)
			return
		}
		os.WriteFile(filepath.Join(tmp, "ready"), nil, 0o644)
		if err := os.Rename(tmp, final); err != nil {
			os.RemoveAll(tmp) // another process won the race: use its base
		}
	})
	if baseErr != nil {
		noServer(t, baseErr)
	}
	return baseDir, baseBin
}

// TempDir is os.MkdirTemp with mode 0711: the servers' account (see
// internal/svcuser) must be able to pass through it to reach the data and
// run directories inside, which it owns.
func TempDir(dir, pattern string) (string, error) {
	d, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	return d, os.Chmod(d, 0o711)
}

// TestDir is t.TempDir made passable (mode 0711, and its parent too) for
// the servers' account.
func TestDir(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{d, filepath.Dir(d)} {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func tmpBase() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// Start starts a throwaway server on a fresh copy of an empty data
// directory; t.Cleanup kills it and removes its files.
func Start(t testing.TB) *mariadb.Instance {
	t.Helper()
	data, bin := Datadir(t)
	return start(t, bin, data, filepath.Join(filepath.Dir(data), "run"))
}

// Datadir is a fresh copy of an empty data directory (initialised once per
// server version), owned by the servers' account, in a directory of its
// own that t.Cleanup removes; with the server binary it was made by.
func Datadir(t testing.TB) (string, *mariadb.Binary) {
	t.Helper()
	src, bin := base(t)
	dir, err := TempDir(tmpBase(), "pristine-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	if out, err := exec.Command("cp", "-a", src, data).CombinedOutput(); err != nil {
		t.Fatalf("copy base data directory: %v: %s", err, out)
	}
	return data, bin
}

// StartOn starts a throwaway server on data, a data directory the test
// made (a copy, an unpacked archive), with its run directory beside it
// (data+".run"), after handing every file under data to the servers'
// account. t.Cleanup kills the server; removing data is the caller's.
func StartOn(t testing.TB, data string) *mariadb.Instance {
	t.Helper()
	bin := Binary(t)
	acct, err := svcuser.Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := acct.OwnTree(data); err != nil {
		t.Fatal(err)
	}
	return start(t, bin, data, data+".run")
}

// start starts the server on data with the slots' profile and a 64 MiB
// buffer pool, and waits until it answers.
func start(t testing.TB, bin *mariadb.Binary, data, run string) *mariadb.Instance {
	t.Helper()
	p := mariadb.DefaultProfile()
	p.BufferPool = 64 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in, err := mariadb.StartReady(ctx, bin, mariadb.Config{Datadir: data, RunDir: run, Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Kill)
	return in
}

// Open returns a connection pool to database on in as root, closed by
// t.Cleanup. An empty database means none.
func Open(t testing.TB, in *mariadb.Instance, database string) *sql.DB {
	t.Helper()
	db, err := in.Open(database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Exec runs each statement on db in order and fails the test at the first
// error, naming the statement.
func Exec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// mysqlClients are MySQL's names of MariaDB's client programs.
var mysqlClients = map[string]string{"mariadb": "mysql", "mariadb-dump": "mysqldump", "mariadb-admin": "mysqladmin"}

// Client names the client program installed for a MariaDB name (mariadb,
// mariadb-dump, mariadb-admin): MySQL's (mysql, mysqldump, mysqladmin) when
// only those are on PATH, as in the MySQL root of scripts/servers.sh.
func Client(name string) string {
	if _, err := exec.LookPath(name); err == nil {
		return name
	}
	if alt, ok := mysqlClients[name]; ok {
		if _, err := exec.LookPath(alt); err == nil {
			return alt
		}
	}
	return name
}

// StartBinlog starts a throwaway server with the binary log on (server id
// 7), a source whose change marker is a GTID, on a freshly initialised
// data directory; t.Cleanup kills it and removes its files.
func StartBinlog(t testing.TB) *mariadb.Instance {
	t.Helper()
	bin := Binary(t)
	dir, err := TempDir("/dev/shm", "pristine-source-binlog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	if err := bin.InitDatadir(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	// The profile turns the binary log off; the options after it turn it on.
	in, err := mariadb.StartReady(context.Background(), bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(dir, "run"), Profile: mariadb.DefaultProfile(),
		Extra: []string{"--log-bin=" + filepath.Join(dir, "run", "binlog"), "--server-id=7"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Kill)
	return in
}
