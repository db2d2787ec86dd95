package pool

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// A global variable changed while a database was leased (by any path: a
// definer's procedure, a grant a lease should not have had; here the admin
// connection) makes its release as unchanged a reset. Both slots of the
// pool are checked: the second's baseline hash is the first's
// (poolGlobals), so its release as unchanged after a session's SET (which
// makes the check read the hash again) fails if the two servers'
// variables hash differently.
func TestReleaseUnchangedCatchesGlobals(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	// A SET inside a routine counts as a SET too (the check hashes the
	// global variables again only when the SET count moved).
	m := templatetest.Build(t, st, "app", "CREATE TABLE t (id INT PRIMARY KEY);\nCREATE PROCEDURE setg() SQL SECURITY INVOKER SET GLOBAL max_connections = 9;", template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name      string
		set       string
		wantReset bool
	}{
		{"nothing changed", "", false},
		// Drivers run SETs of their session at every connect: the hash
		// is read again, and must still be the baseline's.
		{"a session's SET", "SET SESSION sql_mode = 'ANSI'", false},
		{"SET GLOBAL", "SET GLOBAL max_connections = 7", true},
		{"nothing changed after a reset", "", false},
		{"SET GLOBAL in a routine", "CALL `DB`.setg()", true},
		{"nothing changed at last", "", false},
	} {
		var leases []*Lease
		for range 2 {
			l, err := p.Lease(ctx, LeaseOptions{Holder: "test"})
			if err != nil {
				t.Fatal(err)
			}
			leases = append(leases, l)
		}
		for _, l := range leases {
			if tc.set != "" {
				p.mu.Lock()
				admin := p.slots[l.Slot].srv.(*liveServer).admin
				p.mu.Unlock()
				if _, err := admin.ExecContext(ctx, strings.ReplaceAll(tc.set, "DB", l.Database)); err != nil {
					t.Fatal(err)
				}
			}
			reset, err := p.Release(ctx, l.ID, Unchanged)
			if err != nil || reset != tc.wantReset {
				t.Errorf("%s, slot %d: release as unchanged: reset=%v err=%v, want reset=%v", tc.name, l.Slot, reset, err, tc.wantReset)
			}
		}
	}
}

// globalsHash tells values apart by their separator: a count that does not
// match the variables listed fails, so a value that holds the separator
// never hashes as another list would; the slot's directories are hashed as
// placeholders; a NULL differs from an empty value.
func TestGlobalsHash(t *testing.T) {
	sep, null := string(rune(globalsSep)), string(rune(globalsNull))
	base := "ON" + sep + "/s/0/data/" + sep + ""
	for _, tc := range []struct {
		name    string
		values  string
		n       int
		dirs    []string
		same    bool // hashes as base with dirs ["/s/0"]
		wantErr bool
	}{
		{"the same", base, 3, []string{"/s/0"}, true, false},
		{"another slot's directories", "ON" + sep + "/s/1/data/" + sep + "", 3, []string{"/s/1"}, true, false},
		{"a value changed", "OFF" + sep + "/s/0/data/" + sep + "", 3, []string{"/s/0"}, false, false},
		{"a NULL for an empty value", "ON" + sep + "/s/0/data/" + sep + null, 3, []string{"/s/0"}, false, false},
		{"a directory not the slot's", "ON" + sep + "/s/1/data/" + sep + "", 3, []string{"/s/0"}, false, false},
		{"a value holding the separator", "ON" + sep + "/s/0/data/" + sep + sep, 3, []string{"/s/0"}, false, true},
		{"a value fewer", "ON" + sep + "/s/0/data/", 3, []string{"/s/0"}, false, true},
	} {
		want, err := globalsHash([]byte(base), 3, []string{"/s/0"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := globalsHash([]byte(tc.values), tc.n, tc.dirs)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, want an error: %v", tc.name, err, tc.wantErr)
			continue
		}
		if err == nil && (got == want) != tc.same {
			t.Errorf("%s: hashes as the base: %v, want %v", tc.name, got == want, tc.same)
		}
	}
}

// A server's global variables are read with the query prepared on its
// admin connections. When those connections broke between two checks (here
// every one killed), the next check prepares it again on a new one: the
// release as unchanged after it is checked, not reset. Each release
// follows a session's SET, so each check reads the variables.
func TestGlobalsPreparedAfterKill(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, st, "app", "CREATE TABLE t (id INT PRIMARY KEY);", template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p.mu.Lock()
	live := p.slots[0].srv.(*liveServer)
	p.mu.Unlock()
	for i, kill := range []bool{false, false, true, false} {
		l, err := p.Lease(ctx, LeaseOptions{Holder: "test"})
		if err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("mysql", l.DSN)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "SET SESSION sql_mode = 'ANSI'"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if kill {
			live.globals.mu.Lock()
			prepared := live.globals.stmt != nil
			live.globals.mu.Unlock()
			if !prepared {
				t.Fatal("the global variables' query was not prepared by two checks")
			}
			// From a connection of its own, so none of the admin's is
			// left: KillOthers returns once the killed are gone.
			root, err := live.Open("")
			if err != nil {
				t.Fatal(err)
			}
			conn, err := root.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := mariadb.KillOthers(ctx, conn, 400); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			root.Close()
		}
		reset, err := p.Release(ctx, l.ID, Unchanged)
		if err != nil || reset {
			t.Errorf("release %d (admin connections killed before it: %v): reset=%v err=%v, want it handed on", i, kill, reset, err)
		}
	}
}
