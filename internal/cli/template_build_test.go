package cli

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/oci/localregistry"
)

// probeQuery is the first query capture.Open sends: one per opening of a
// source.
const probeQuery = "SELECT @@version, @@hostname, @@port, @@datadir, @@log_bin"

// TestTemplateBuildOpensTheSourceOnce: `template build --from-server`, with
// and without a fleet cache, opens the live source once per build. The
// source (a real server this test starts, its general log in a table)
// sees one probe, and every connection the build makes is that probe's or
// one of the capture's snapshot sessions; before the build pipeline was
// one, the key's computations opened it two times, three with --cache.
func TestTemplateBuildOpensTheSourceOnce(t *testing.T) {
	mariadbtest.Binary(t)
	src := mariadbtest.Start(t)
	db := mariadbtest.Open(t, src, "")
	db.SetMaxOpenConns(1) // the test's own statements: one thread, left out below
	mariadbtest.Exec(t, db, "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO shop.t VALUES (1, 'one'), (2, 'two'), (3, 'three')",
		"SET GLOBAL log_output='TABLE'", "SET GLOBAL general_log=ON")
	var self int64
	if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&self); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvSourcePassword, "")
	t.Setenv(EnvMySQLPassword, "")
	cases := []struct {
		name  string
		cache bool
	}{{"plain", false}, {"cache", true}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, err := mariadbtest.TempDir("/dev/shm", "pristine-cli-test-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if k := mariadb.KillOrphans(root); len(k) > 0 {
					t.Errorf("servers left running: %v", k)
				}
				os.RemoveAll(root)
			})
			g := &Globals{Root: filepath.Join(root, "root"), NoTimezones: true, JSON: true}
			var f BuildFlags
			f.Name, f.Backend, f.LogSize, f.Workers, f.DBsPerSlot = "shop", "auto", "48M", 2, 1
			f.Server.DSN = "mysql://root@localhost/?socket=" + src.Config.Socket()
			f.Server.Method = "logical"
			if tc.cache {
				reg, err := localregistry.Start(localregistry.Config{Dir: t.TempDir()})
				if errors.Is(err, localregistry.ErrMissing) {
					t.Skipf("%v: the cache case needs a real registry", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(reg.Kill)
				f.Cache.Repo, f.Cache.PlainHTTP = reg.Addr+"/fleet/cache", true
			}
			mariadbtest.Exec(t, db, "TRUNCATE mysql.general_log")
			m, built, err := RunTemplateBuild(context.Background(), g, f)
			if err != nil || !built {
				t.Fatalf("template build --from-server: built=%v err=%v", built, err)
			}
			if len(m.Databases) != 1 || m.Databases[0] != "shop" {
				t.Fatalf("template databases %v, want [shop]", m.Databases)
			}
			probes, others := sourceConnections(t, db, self)
			if probes != 1 || len(others) > 0 {
				t.Fatalf("the build opened the source %d times (want 1) and made %d connections besides the probe and the capture's snapshot sessions: %v",
					probes, len(others), others)
			}
		})
	}
}

// sourceConnections reads the source's general log: how many times the
// probe ran, and the connections other than the test's own (self), the
// probe's and the capture's snapshot sessions.
func sourceConnections(t *testing.T, db *sql.DB, self int64) (probes int, others []string) {
	t.Helper()
	rows, err := db.Query("SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE thread_id <> ? ORDER BY event_time", self)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	connected := map[int64]bool{}
	known := map[int64]bool{} // threads that probed or joined the snapshot
	for rows.Next() {
		var id int64
		var cmd, arg string
		if err := rows.Scan(&id, &cmd, &arg); err != nil {
			t.Fatal(err)
		}
		switch {
		case cmd == "Connect":
			connected[id] = true
		case strings.HasPrefix(arg, probeQuery):
			probes++
			known[id] = true
		case strings.Contains(arg, "WITH CONSISTENT SNAPSHOT"), strings.HasPrefix(arg, "FLUSH TABLES WITH READ LOCK"):
			known[id] = true
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(connected) == 0 {
		t.Fatal("the source's general log shows no connection: is it logging?")
	}
	for id := range connected {
		if !known[id] {
			others = append(others, "thread "+strconv.FormatInt(id, 10))
		}
	}
	return probes, others
}
