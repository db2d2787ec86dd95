package mariadb_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/svcuser"
)

func TestStartQueryStop(t *testing.T) {
	in := mariadbtest.Start(t)
	db := mariadbtest.Open(t, in, "")
	var v string
	if err := db.QueryRow("SELECT @@version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, in.Binary.Version[:4]) {
		t.Errorf("server says version %q, binary says %q", v, in.Binary.Version)
	}
	// Slots write the redo log at every commit (it survives a kill); the
	// page cache is never flushed, on either flavour.
	var flush, method string
	if err := db.QueryRow("SELECT @@innodb_flush_log_at_trx_commit, @@innodb_flush_method").Scan(&flush, &method); err != nil || flush != "2" || method != "nosync" {
		t.Errorf("slot profile not applied: innodb_flush_log_at_trx_commit=%q, innodb_flush_method=%q (%v), want 2 and nosync", flush, method, err)
	}
	var port int
	if err := db.QueryRow("SELECT @@port").Scan(&port); err != nil || port != in.Config.Port {
		t.Errorf("port = %d, want %d (%v)", port, in.Config.Port, err)
	}
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(in.Config.Port)))
	if err != nil {
		t.Fatalf("loopback TCP port not listening: %v", err)
	}
	c.Close()
	// As generous as template builds are (base.go): a loaded CI machine
	// has made a MySQL shutdown outlast 30 s once.
	if err := in.Stop(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if in.Running() {
		t.Fatal("server still running after Stop")
	}
}

func TestPortInUse(t *testing.T) {
	bin := mariadbtest.Binary(t)
	first := mariadbtest.Start(t)
	dir := mariadbtest.TestDir(t)
	data := filepath.Join(dir, "data")
	if err := bin.InitDatadir(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	in, err := mariadb.Start(bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(dir, "run"), Port: first.Config.Port, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = in.WaitReady(ctx)
	if !errors.Is(err, mariadb.ErrPortInUse) {
		t.Fatalf("WaitReady on a taken port = %v, want ErrPortInUse", err)
	}
}

// TestStartReadyRetriesATakenPort: a port of the kernel's choosing that
// another program takes before the server binds it costs a second start on
// a new port, not a failed build or slot.
func TestStartReadyRetriesATakenPort(t *testing.T) {
	bin := mariadbtest.Binary(t)
	first := mariadbtest.Start(t)
	dir := mariadbtest.TestDir(t)
	data := filepath.Join(dir, "data")
	if err := bin.InitDatadir(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	picks := 0
	defer mariadb.SetFreePort(func(addr string) (int, error) {
		picks++
		if picks == 1 {
			return first.Config.Port, nil // taken between the choice and the bind
		}
		return mariadb.FreePortOn(addr)
	})()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in, err := mariadb.StartReady(ctx, bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(dir, "run"), Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatalf("StartReady after a taken port: %v", err)
	}
	defer in.Kill()
	if picks != 2 || in.Config.Port == first.Config.Port {
		t.Fatalf("StartReady picked %d ports and runs on %d (the taken one is %d): want a second start on a new port", picks, in.Config.Port, first.Config.Port)
	}
}

func TestExitedServerReportsLog(t *testing.T) {
	bin := mariadbtest.Binary(t)
	dir := mariadbtest.TestDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	acct, err := svcuser.Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := acct.Own(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	// An empty, uninitialised data directory: the server cannot start.
	// MySQL opens InnoDB before it reads its options, and would fail on
	// the missing ibdata1 first: it gets an initialised one, so the bad
	// option is what stops it.
	if bin.Flavor == mariadb.MySQL {
		if err := os.Remove(filepath.Join(dir, "data")); err != nil {
			t.Fatal(err)
		}
		if err := bin.InitDatadir(context.Background(), filepath.Join(dir, "data")); err != nil {
			t.Fatal(err)
		}
	}
	in, err := mariadb.Start(bin, mariadb.Config{Datadir: filepath.Join(dir, "data"), RunDir: filepath.Join(dir, "run"), Profile: mariadb.DefaultProfile(), Extra: []string{"--no-such-option-pristine"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = in.WaitReady(ctx)
	if !errors.Is(err, mariadb.ErrExited) || !strings.Contains(err.Error(), "no-such-option-pristine") {
		t.Fatalf("WaitReady = %v, want ErrExited naming the bad option", err)
	}
}

func TestKillOrphans(t *testing.T) {
	in := mariadbtest.Start(t)
	killed := mariadb.KillOrphans(filepath.Dir(in.Config.Datadir))
	if len(killed) != 1 || killed[0] != in.PID() {
		t.Fatalf("KillOrphans = %v, want [%d]", killed, in.PID())
	}
	select {
	case <-in.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server still running after KillOrphans")
	}
	if k := mariadb.KillOrphans(t.TempDir()); len(k) != 0 {
		t.Fatalf("KillOrphans on an unrelated directory killed %v", k)
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		out    string
		flavor mariadb.Flavor
		ver    string
		bad    bool
	}{
		{out: "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)", flavor: mariadb.MariaDB, ver: "10.11.19-MariaDB-0+deb12u1"},
		{out: "/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)", flavor: mariadb.MySQL, ver: "8.0.36"},
		{out: "/usr/sbin/mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))", flavor: mariadb.MySQL, ver: "9.7.4-2"},
		{out: "mariadbd  Ver 11.8.9-MariaDB-0+deb13u1 from Debian for debian-linux-gnu on x86_64", flavor: mariadb.MariaDB, ver: "11.8.9-MariaDB-0+deb13u1"},
		{out: "/usr/sbin/mysqld  Ver 8.0.29 for Linux on x86_64 (MySQL Community Server - GPL)", bad: true},
		{out: "/usr/sbin/mysqld  Ver 5.7.44 for Linux on x86_64 (MySQL Community Server - GPL)", bad: true},
		{out: "mysqld  Ver 10.3.39-MariaDB for Linux", bad: true},
		{out: "garbage", bad: true},
	} {
		b, err := mariadb.ParseVersion("/x", tc.out)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: want an error", tc.out)
			}
			continue
		}
		if err != nil || b.Flavor != tc.flavor || b.Version != tc.ver {
			t.Errorf("%q: got %+v, %v", tc.out, b, err)
		}
	}
}
