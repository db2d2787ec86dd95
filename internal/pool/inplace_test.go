package pool

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
	"github.com/pristinedb/pristine/internal/verify"
)

// inplaceSchema has a table of each engine the in-place reset restores,
// with what a restore must bring back: AUTO_INCREMENT, secondary
// indexes, a foreign key whose ON DELETE CASCADE InnoDB runs on its own
// (no row counter sees it), a trigger, a routine; and a MEMORY table,
// which it cannot restore. MySQL has no Aria: there aria_t is MyISAM
// (inplaceSchemaFor).
const inplaceSchema = inplaceInnoDB + `
CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(40)) ENGINE=InnoDB;
CREATE TRIGGER parent_audit AFTER UPDATE ON parent FOR EACH ROW INSERT INTO audit (what) VALUES (NEW.name);
CREATE TABLE aria_t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40), KEY ix_v (v)) ENGINE=Aria;
INSERT INTO aria_t (v) VALUES ('p'), ('q');
CREATE TABLE myisam_t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40), KEY ix_v (v)) ENGINE=MyISAM;
INSERT INTO myisam_t (v) VALUES ('m'), ('n');
CREATE TABLE mem_t (id INT PRIMARY KEY) ENGINE=MEMORY;
CREATE PROCEDURE bump() MODIFIES SQL DATA UPDATE parent SET name = CONCAT(name, '!') WHERE id = 1;
`

// inplaceInnoDB is the start of inplaceSchema: two InnoDB tables with
// AUTO_INCREMENT, secondary indexes and a cascading foreign key, what
// --dbs-per-slot copies.
const inplaceInnoDB = `
CREATE TABLE parent (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40), KEY ix_name (name)) ENGINE=InnoDB;
INSERT INTO parent (name) VALUES ('a'), ('b'), ('c');
CREATE TABLE child (id INT AUTO_INCREMENT PRIMARY KEY, parent_id INT, note VARCHAR(40), KEY ix_note (note),
  FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE) ENGINE=InnoDB;
INSERT INTO child (parent_id, note) VALUES (1, 'x'), (2, 'y'), (3, 'z');
`

// inplaceSchemaFor is inplaceSchema in the terms of flavour f's server.
func inplaceSchemaFor(f mariadb.Flavor) string {
	if f == mariadb.MySQL {
		return strings.ReplaceAll(inplaceSchema, "ENGINE=Aria", "ENGINE=MyISAM")
	}
	return inplaceSchema
}

// inplacePool brings up a 2-slot pool of inplaceSchema on a btrfs scratch
// filesystem (the seeds path) and leases one slot as the reference, the
// template as a fresh slot shows it, never written.
func inplacePool(t *testing.T) (*Pool, *sql.DB) {
	t.Helper()
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	m := templatetest.Build(t, st, "app", inplaceSchemaFor(st.Binary().Flavor), template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	ref := leaseIn(t, p)
	return p, openLease(t, ref)
}

func leaseIn(t *testing.T, p *Pool) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := p.Lease(ctx, LeaseOptions{Holder: "inplace-test"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func openLease(t *testing.T, l *Lease) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { db.Close() })
	return db
}

// paths returns the pool's reset path counters.
func paths(p *Pool) map[string]int64 {
	return p.Status(false).Stats.ResetPaths
}

// verifyClean compares a lease's database with the reference's, schema
// and rows and accounts, and fails on any difference.
func verifyClean(t *testing.T, ref, db *sql.DB, what string) {
	t.Helper()
	r, err := verify.Compare(context.Background(), verify.Side{DB: ref, Label: "reference"}, verify.Side{DB: db, Label: "after " + what},
		verify.Options{Pairs: []verify.Pair{{Source: "app", Target: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		var b strings.Builder
		_ = verify.WriteText(&b, r)
		t.Fatalf("after %s the next holder does not see the template:\n%s", what, b.String())
	}
}

// slotAdminOf is the admin connection of slot i's server (root).
func slotAdminOf(p *Pool, i int) *sql.DB {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slots[i].srv.(*liveServer).admin
}

// Every kind of change a holder can make is undone for the next holder,
// who sees the template exactly (verify clean), by the path the change
// allows: row writes in InnoDB, Aria and MyISAM tables (through a
// trigger, a routine and a cascading foreign key too), with temporary
// tables and connections left open, in place; anything else by the full
// reset, each with its reason.
//
// MySQL counts CREATE TEMPORARY TABLE as CREATE TABLE (MariaDB counts it
// apart): there a holder's temporary tables reset fully, as DDL.
func TestInPlaceReset(t *testing.T) {
	p, ref := inplacePool(t)
	my := p.bin.Flavor == mariadb.MySQL
	aria, tempPath := "Aria", PathInPlace
	if my {
		aria, tempPath = "MyISAM", PathFull+":"+FallbackDDL
	}
	mustDo := func(db *sql.DB, qs ...string) {
		t.Helper()
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range qs {
			if _, err := conn.ExecContext(context.Background(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		// change is what the holder does; admin is its slot's root, for
		// what a lease cannot do itself but a template's routine or
		// another way in might.
		change func(t *testing.T, db, admin *sql.DB, dir string)
		want   string
	}{
		{"InnoDB rows", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "INSERT INTO parent (name) VALUES ('new')", "UPDATE child SET note = 'changed' WHERE id = 2", "DELETE FROM parent WHERE id = 3")
		}, PathInPlace},
		{"InnoDB rows by a trigger and a routine", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "CALL bump()")
		}, PathInPlace},
		{"cascading delete", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "DELETE FROM parent WHERE id = 1")
		}, PathInPlace},
		{"Aria rows", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "INSERT INTO aria_t (v) VALUES ('r'), ('s')", "DELETE FROM aria_t WHERE id = 1")
		}, PathInPlace},
		{"MyISAM rows", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "INSERT INTO myisam_t (v) VALUES ('o')", "UPDATE myisam_t SET v = 'changed' WHERE id = 2")
		}, PathInPlace},
		{"rows in a transaction left open", func(t *testing.T, db, _ *sql.DB, _ string) {
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// Left open on purpose: the reset kills it.
			for _, q := range []string{"BEGIN", "INSERT INTO parent (name) VALUES ('uncommitted')", "UPDATE aria_t SET v = 'open' WHERE id = 2"} {
				if _, err := conn.ExecContext(context.Background(), q); err != nil {
					t.Fatal(err)
				}
			}
		}, PathInPlace},
		{"temporary tables", func(t *testing.T, db, _ *sql.DB, _ string) {
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// The connection stays open, its temporary tables alive, until
			// the reset kills it.
			for _, q := range []string{"CREATE TEMPORARY TABLE tmp_i (id INT) ENGINE=InnoDB", "INSERT INTO tmp_i VALUES (1)",
				"CREATE TEMPORARY TABLE tmp_a (id INT) ENGINE=" + aria, "INSERT INTO tmp_a VALUES (1)",
				"CREATE TEMPORARY TABLE parent (id INT)", "INSERT INTO parent VALUES (42)",
				"INSERT INTO app.child (parent_id, note) SELECT 1, 'beside a temporary table'"} {
				if _, err := conn.ExecContext(context.Background(), q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}, tempPath},
		{"DDL", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "ALTER TABLE parent ADD COLUMN extra INT")
		}, PathFull + ":" + FallbackDDL},
		{"TRUNCATE", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "TRUNCATE TABLE audit")
		}, PathFull + ":" + FallbackDDL},
		{"a new table", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "CREATE TABLE planted (id INT) ENGINE=InnoDB", "INSERT INTO planted VALUES (1)")
		}, PathFull + ":" + FallbackDDL},
		{"a routine", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "CREATE PROCEDURE planted() SELECT 1")
		}, PathFull + ":" + FallbackDDL},
		{"an event", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "CREATE EVENT planted ON SCHEDULE EVERY 1 HOUR DISABLE DO SELECT 1")
		}, PathFull + ":" + FallbackDDL},
		{"an account", func(t *testing.T, _, admin *sql.DB, _ string) {
			mustDo(admin, "CREATE USER planted@'%' IDENTIFIED BY 'x'", "GRANT SELECT ON app.* TO planted@'%'")
		}, PathFull + ":" + FallbackDDL},
		{"a global variable", func(t *testing.T, _, admin *sql.DB, _ string) {
			mustDo(admin, "SET GLOBAL max_connect_errors = 7")
		}, PathFull + ":" + FallbackGlobals},
		{"a global variable by a prepared statement", func(t *testing.T, _, admin *sql.DB, _ string) {
			mustDo(admin, "PREPARE s FROM 'SET @@global.max_connect_errors = 8'", "EXECUTE s")
		}, PathFull + ":" + FallbackGlobals},
		{"the per-table row counters turned off", func(t *testing.T, db, admin *sql.DB, _ string) {
			// What a holder that became root of its server could do to hide
			// its writes: the reset sees the counters off.
			off := "SET GLOBAL userstat = 0"
			if my {
				off = "UPDATE performance_schema.setup_objects SET ENABLED = 'NO' WHERE OBJECT_TYPE = 'TABLE' AND OBJECT_SCHEMA = '%'"
			}
			mustDo(admin, off)
			mustDo(db, "UPDATE parent SET name = 'uncounted' WHERE id = 2")
		}, PathFull + ":" + FallbackUncounted},
		{"a session variable", func(t *testing.T, db, _ *sql.DB, _ string) {
			// A SET makes the reset hash the global variables again; they
			// did not change.
			mustDo(db, "SET SESSION sql_mode = ''", "INSERT INTO parent (name) VALUES ('set')")
		}, PathInPlace},
		{"a file", func(t *testing.T, _, _ *sql.DB, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "data", "app", "planted.txt"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, PathFull + ":" + FallbackFiles},
		{"a system table's rows", func(t *testing.T, _, admin *sql.DB, _ string) {
			mustDo(admin, "INSERT INTO mysql.time_zone_leap_second VALUES (1, 1)")
			// MariaDB 11.8's user statistics leave the mysql schema out
			// (10.11's count it): the reset cannot see this change there.
			counted, err := tableRows(context.Background(), admin, p.bin.Flavor)
			if err != nil {
				t.Fatal(err)
			}
			if counted["mysql\x00time_zone_leap_second"].written == 0 {
				mustDo(admin, "DELETE FROM mysql.time_zone_leap_second")
				t.Skip("known gap: this server's user statistics (information_schema.TABLE_STATISTICS) do not count rows written in the mysql schema (MariaDB 11.8), so the in-place reset cannot see such a change (docs/servers.md, \"Reset\")")
			}
		}, PathFull + ":" + FallbackSystem},
		{"a MEMORY table's rows", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "INSERT INTO mem_t VALUES (1)")
		}, PathFull + ":" + FallbackEngine},
		{"a prepared XA transaction", func(t *testing.T, db, _ *sql.DB, _ string) {
			mustDo(db, "XA START 'x'", "INSERT INTO parent (name) VALUES ('xa')", "XA END 'x'", "XA PREPARE 'x'")
		}, PathFull + ":" + FallbackXA},
		{"the server lost", func(t *testing.T, _, _ *sql.DB, _ string) {
			// The slot's server dies under its holder: the lease is lost and
			// the slot replaced by the full reset.
		}, PathFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := leaseIn(t, p)
			// A case that skips after its lease: the slot goes back for the next.
			t.Cleanup(func() { p.Release(context.Background(), l.ID, Dirty) })
			db := openLease(t, l)
			p.mu.Lock()
			dir := p.slots[l.Slot].dir
			p.mu.Unlock()
			before := paths(p)
			tc.change(t, db, slotAdminOf(p, l.Slot), dir)
			if tc.name == "the server lost" {
				p.mu.Lock()
				pid := p.slots[l.Slot].srv.PID()
				p.mu.Unlock()
				_ = syscall.Kill(pid, syscall.SIGKILL)
				waitFor(t, p, "the dead slot to be replaced", func() bool { return p.stats.ResetPaths[PathFull] > before[PathFull] })
			} else if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
				t.Fatal(err)
			}
			next := leaseIn(t, p) // the reference holds the other slot: this is the reset one
			// A case that fails goes on with the next: its slot goes back.
			t.Cleanup(func() { p.Release(context.Background(), next.ID, Dirty) })
			if next.Slot != l.Slot {
				t.Fatalf("the next lease got slot %d, want the reset slot %d", next.Slot, l.Slot)
			}
			after := paths(p)
			for path, n := range after {
				if n-before[path] > 0 && path != tc.want {
					t.Errorf("the reset took path %s, want %s (paths before %v, after %v)", path, tc.want, before, after)
				}
			}
			if after[tc.want]-before[tc.want] != 1 {
				t.Errorf("path %s counted %d times, want once (paths before %v, after %v)", tc.want, after[tc.want]-before[tc.want], before, after)
			}
			verifyClean(t, ref, openLease(t, next), tc.name)
			if _, err := p.Release(context.Background(), next.ID, Unchanged); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Each table was read once and kept (tableKinds): the cases after the
	// first restored parent and child by what was kept, and the MEMORY
	// table is refused by what was kept.
	for _, name := range []string{"parent", "child", "mem_t"} {
		if !p.kinds.known(tableRef{"app", name}) {
			t.Errorf("app.%s: the pool kept no plan of it", name)
		}
	}
	if engine, err := p.kinds.engine(context.Background(), nil, tableRef{"app", "parent"}); err != nil || engine != "InnoDB" {
		t.Errorf("app.parent: kept %q, %v; want InnoDB", engine, err)
	}
	if _, err := p.kinds.engine(context.Background(), nil, tableRef{"app", "mem_t"}); fallbackReason(err) != FallbackEngine {
		t.Errorf("app.mem_t: kept %v; want the %s fallback", err, FallbackEngine)
	}
}

// TestInPlaceResetSessionsNotEnded plays a holder whose connection does
// not end when killed: it is still rolling back a big transaction when the
// kill rounds run out (one round here, ~2 s in the product). The reset is
// then full (reason "sessions"), and the next holder sees the template.
func TestInPlaceResetSessionsNotEnded(t *testing.T) {
	p, ref := inplacePool(t)
	old := killRounds
	killRounds = 1
	t.Cleanup(func() { killRounds = old })
	l := leaseIn(t, p)
	conn, err := openLease(t, l).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Left open on purpose: the kill makes the server roll it back.
	bulk := "INSERT INTO parent (name) SELECT CONCAT('bulk', seq) FROM seq_1_to_200000"
	if p.bin.Flavor == mariadb.MySQL { // no sequence engine: 20^4 rows of a recursive CTE
		bulk = "INSERT INTO parent (name) WITH RECURSIVE d (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 19) SELECT CONCAT('bulk', a.n, b.n, c.n, e.n) FROM d a, d b, d c, d e"
	}
	for _, q := range []string{"BEGIN", bulk} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	before := paths(p)
	if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
		t.Fatal(err)
	}
	next := leaseIn(t, p)
	if next.Slot != l.Slot {
		t.Fatalf("the next lease got slot %d, want the reset slot %d", next.Slot, l.Slot)
	}
	want := PathFull + ":" + FallbackSessions
	if after := paths(p); after[want]-before[want] != 1 || after[PathInPlace] != before[PathInPlace] {
		t.Errorf("want one reset by path %s, none in place: paths before %v, after %v", want, before, after)
	}
	verifyClean(t, ref, openLease(t, next), "a connection rolling back past the kill rounds")
}

// TestResetHandsOnTheAccount plays a holder that sets its own account's
// password, the one account statement a lease may run on itself, so as
// to log in again after its release. The account is handed to the next
// holder with a new password (rekeyAccount), by the in-place reset (the
// holder wrote a row) and by a release as unchanged (it wrote nothing):
// it does not open with the old password or the holder's own (nor does
// the old account's, when a full reset made a new one), and the new
// lease's credentials do.
func TestResetHandsOnTheAccount(t *testing.T) {
	p, _ := inplacePool(t)
	setOwn := "SET PASSWORD = PASSWORD('holder-chosen')"
	if p.bin.Flavor == mariadb.MySQL {
		setOwn = "SET PASSWORD = 'holder-chosen'"
	}
	for _, tc := range []struct {
		name  string
		write string
		mode  ReleaseMode
	}{
		{"in place", "INSERT INTO parent (name) VALUES ('written')", Dirty},
		{"unchanged", "", Unchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := leaseIn(t, p)
			conn, err := openLease(t, l).Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{setOwn, tc.write} {
				if q == "" {
					continue
				}
				if _, err := conn.ExecContext(context.Background(), q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			conn.Close()
			if _, err := p.Release(context.Background(), l.ID, tc.mode); err != nil {
				t.Fatal(err)
			}
			next := leaseIn(t, p)
			t.Cleanup(func() { p.Release(context.Background(), next.ID, Dirty) })
			if next.Slot != l.Slot {
				t.Fatalf("the next lease got slot %d, want the reset slot %d", next.Slot, l.Slot)
			}
			if next.Password == l.Password {
				t.Errorf("the next holder's account has the old holder's password")
			}
			type login struct{ what, user, password string }
			tries := []login{
				{"the old password", next.User, l.Password},
				{"the holder's own password", next.User, "holder-chosen"},
			}
			if next.User != l.User { // a full reset makes a new account
				tries = append(tries, login{"the old name and password", l.User, l.Password},
					login{"the old name and the holder's own password", l.User, "holder-chosen"})
			}
			for _, try := range tries {
				dsn := strings.Replace(strings.Replace(next.DSN, next.User+":", try.user+":", 1), ":"+next.Password+"@", ":"+try.password+"@", 1)
				if dsn == next.DSN {
					t.Fatalf("%s: the DSN %q was not rewritten", try.what, next.DSN)
				}
				db, err := sql.Open("mysql", dsn)
				if err != nil {
					t.Fatal(err)
				}
				if err := db.Ping(); err == nil {
					t.Errorf("%s opens the slot after the release", try.what)
				}
				db.Close()
			}
			if err := openLease(t, next).Ping(); err != nil {
				t.Errorf("the next holder's credentials: %v", err)
			}
		})
	}
}

// A database released as unchanged that was written is reset in place
// from where the check left it (handedOver): the check's new password and
// kill are the reset's, so the release and the reset together run one
// ALTER USER, not two; a connection the holder left open is gone, the
// next holder sees the template, the old holder's account is refused, and
// a holder's DDL beside its rows still resets fully.
func TestResetAfterAFailedCheck(t *testing.T) {
	p, ref := inplacePool(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
		alters int64 // ALTER USER statements of the release and the reset; -1: not counted
	}{
		{"rows", []string{"INSERT INTO parent (name) VALUES ('written')", "UPDATE child SET note = 'changed' WHERE id = 2"}, PathInPlace, 1},
		{"rows again", []string{"DELETE FROM parent WHERE id = 3"}, PathInPlace, 1},
		{"rows and a table", []string{"INSERT INTO parent (name) VALUES ('x')", "CREATE TABLE planted (id INT)"}, PathFull + ":" + FallbackDDL, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := leaseIn(t, p)
			conn, err := openLease(t, l).Conn(ctx) // left open across the release
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range tc.writes {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			admin := slotAdminOf(p, l.Slot)
			alters := func() int64 {
				t.Helper()
				st, err := mariadb.ReadStatus(ctx, admin, "GLOBAL", "WHERE Variable_name = 'Com_alter_user'")
				if err != nil {
					t.Fatal(err)
				}
				n, _ := strconv.ParseInt(st["COM_ALTER_USER"], 10, 64)
				return n
			}
			before, paths0 := alters(), paths(p)
			reset, err := p.Release(ctx, l.ID, Unchanged)
			if err != nil || !reset {
				t.Fatalf("release of a written database as unchanged: reset=%v err=%v, want a reset", reset, err)
			}
			next := leaseIn(t, p)
			t.Cleanup(func() { p.Release(context.Background(), next.ID, Dirty) })
			if next.Slot != l.Slot {
				t.Fatalf("the next lease got slot %d, want the reset slot %d", next.Slot, l.Slot)
			}
			if after := paths(p); after[tc.want] != paths0[tc.want]+1 {
				t.Fatalf("the reset did not take path %s (paths before %v, after %v)", tc.want, paths0, after)
			}
			if tc.alters >= 0 {
				if n := alters() - before; n != tc.alters {
					t.Errorf("the release and the reset ran %d ALTER USER statements, want %d (the reset hands on the account the check did)", n, tc.alters)
				}
			}
			verifyClean(t, ref, openLease(t, next), tc.name+" released as unchanged")
			if _, err := conn.ExecContext(ctx, "SELECT 1"); err == nil {
				t.Errorf("the old holder's connection left open still runs statements after the reset")
			}
			old, err := sql.Open("mysql", l.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			if err := old.Ping(); err == nil {
				t.Errorf("the old holder's account logs in after the reset")
			}
		})
	}
}

// A slot of several databases (--dbs-per-slot) is reset in place once
// every database was handed out and returned: the rows its holders
// changed in each database are restored (verify clean against a slot
// never written), each holder's account stops working and the next
// holders' work; a DDL by any one of the holders resets the slot fully.
func TestInPlaceResetDBsPerSlot(t *testing.T) {
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	m := templatetest.Build(t, st, "app", inplaceInnoDB, template.BuildOptions{DBsPerSlot: 2})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	// Every database of both slots is leased; the slot of the first lease
	// is written, the other's databases are the references.
	bySlot, written := map[int][]*Lease{}, -1
	for range 4 {
		l := leaseIn(t, p)
		bySlot[l.Slot] = append(bySlot[l.Slot], l)
		if written < 0 {
			written = l.Slot
		}
	}
	refs := map[string]*sql.DB{}
	for slot, ls := range bySlot {
		if len(ls) != 2 {
			t.Fatalf("slot %d handed out %d databases, want 2", slot, len(ls))
		}
		if slot != written {
			for _, l := range ls {
				refs[l.Database] = openLease(t, l)
			}
		}
	}
	round := func(what string, write func(l *Lease, db *sql.DB), want string) {
		t.Helper()
		before := paths(p)[want]
		old := bySlot[written]
		for _, l := range old {
			write(l, openLease(t, l))
		}
		for _, l := range old {
			if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
				t.Fatal(err)
			}
		}
		var next []*Lease
		for range old {
			next = append(next, leaseIn(t, p))
		}
		if got := paths(p)[want]; got != before+1 {
			t.Fatalf("%s: reset paths %v, want one more %s", what, paths(p), want)
		}
		for _, l := range old {
			db := openLease(t, l)
			if err := db.Ping(); err == nil {
				t.Errorf("%s: the returned lease of %s still logs in", what, l.Database)
			}
		}
		for _, l := range next {
			if l.Slot != written {
				t.Fatalf("%s: lease of slot %d, want the reset slot %d", what, l.Slot, written)
			}
			r, err := verify.Compare(context.Background(), verify.Side{DB: refs[l.Database], Label: "reference"},
				verify.Side{DB: openLease(t, l), Label: "after " + what},
				verify.Options{Pairs: []verify.Pair{{Source: l.Database, Target: l.Database}}})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Clean() {
				var b strings.Builder
				_ = verify.WriteText(&b, r)
				t.Fatalf("after %s, %s is not the template:\n%s", what, l.Database, b.String())
			}
		}
		bySlot[written] = next
	}
	round("rows in both databases", func(l *Lease, db *sql.DB) {
		for _, q := range []string{"INSERT INTO parent (name) VALUES ('" + l.Database + "')", "DELETE FROM parent WHERE id = 1",
			"UPDATE child SET note = 'changed' WHERE id = 2"} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}, PathInPlace)
	round("DDL in one database", func(l *Lease, db *sql.DB) {
		if l.Database != bySlot[written][0].Database {
			return
		}
		if _, err := db.Exec("ALTER TABLE parent ADD COLUMN extra INT"); err != nil {
			t.Fatal(err)
		}
	}, PathFull+":"+FallbackDDL)
}

// After an in-place reset the slot's write mark holds: no settleMark
// polls the idle slot's server (it would for up to a second, two queries
// every 10 ms), and a holder who writes nothing keeps the slot: its
// release --unchanged hands it on. MySQL's mark counts statements;
// MariaDB's holds InnoDB's log sequence number, which the purge of the
// restore moves (markSettles): there the reset wakes the purge and waits
// for it before it reads the mark (purge.go), in a pool whose holders
// release --unchanged (marksRead). Without that wait the idle
// slot is polled by settleMark, and a slot leased at once and held past
// InnoDB's own wake of the purge is reset at its release. The release's
// kill of the holder's connections leaves the waker's.
func TestInPlaceResetMarkHolds(t *testing.T) {
	p, _ := inplacePool(t)
	ctx := context.Background()
	// A pool whose holders release --unchanged (marksRead).
	if reset, err := p.Release(ctx, leaseIn(t, p).ID, Unchanged); err != nil || reset {
		t.Fatalf("release --unchanged of a fresh slot: reset=%v err=%v", reset, err)
	}
	for round := 0; round < 6; round++ {
		l := leaseIn(t, p)
		if _, err := openLease(t, l).Exec("DELETE FROM child WHERE id = 3"); err != nil {
			t.Fatal(err)
		}
		before := paths(p)[PathInPlace]
		if _, err := p.Release(ctx, l.ID, Dirty); err != nil {
			t.Fatal(err)
		}
		waitFor(t, p, "the slot reset", func() bool { return p.slots[l.Slot].state == Ready })
		if got := paths(p)[PathInPlace]; got != before+1 {
			t.Fatalf("round %d: %d in-place reset(s), want one", round, got-before)
		}
		if round%2 == 0 {
			// Left idle first; the odd rounds lease it at once.
			admin := slotAdminOf(p, l.Slot)
			q0 := globalStatus(t, admin, "Questions")
			time.Sleep(300 * time.Millisecond)
			// The second read is one question of its own.
			if moved := globalStatus(t, admin, "Questions") - q0 - 1; moved > 2 {
				t.Errorf("round %d: the idle slot's server answered %d statements in 300 ms after its in-place reset, want none from the daemon", round, moved)
			}
		}
		next := leaseIn(t, p) // the reference holds the other slot
		if next.Slot != l.Slot {
			t.Fatalf("round %d: the next lease got slot %d, want the reset slot %d", round, next.Slot, l.Slot)
		}
		if round%2 == 1 {
			// Held past InnoDB's own wake of its purge (once a second),
			// which would move a mark read before the purge ran.
			time.Sleep(1200 * time.Millisecond)
		}
		reused := p.Status(false).Stats.Reused
		reset, err := p.Release(ctx, next.ID, Unchanged)
		if err != nil || reset {
			t.Fatalf("round %d: release --unchanged of a holder that wrote nothing after an in-place reset: reset=%v err=%v, want the slot handed on", round, reset, err)
		}
		if got := p.Status(false).Stats.Reused; got != reused+1 {
			t.Errorf("round %d: reused %d, want %d", round, got, reused+1)
		}
		if markSettles(p.bin.Flavor) {
			// The release killed every connection but the daemon's own
			// purge wakes (purgeWaker.spared), which outlive it.
			p.mu.Lock()
			live := p.slots[l.Slot].srv.(*liveServer)
			p.mu.Unlock()
			spared := live.purge.spared()
			if len(spared) == 0 {
				t.Fatalf("round %d: the purge waker holds no connection after an in-place reset", round)
			}
			var n int
			if err := live.admin.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", spared[0]).Scan(&n); err != nil || n != 1 {
				t.Errorf("round %d: the purge waker's connection %d after the release: %d in the process list (%v), want it spared", round, spared[0], n, err)
			}
		}
	}
}

// Where the import keeps the table's own AUTO_INCREMENT counter (MySQL),
// the in-place reset sets the template's back with an ALTER TABLE of its
// own, and only where the counter can have moved: a holder who only
// deleted rows costs the restore no such statement (3-5 ms of the
// server's CPU each); an insert does (without it the next holder's
// counter differs), and so do an insert rolled back, inserts a unique
// key refuses (each spends a value: the counter moves with no row
// written) and an update; the next holder sees the template's counter
// (verify compares it). The rows a holder added are deleted instead
// (mariadb.Changes.DeleteAdded): all of a table the template has empty,
// and, from the counter on, those of a table with rows only inserted
// into, which is then counted and imported after all when a row went
// into a gap below the counter; not after more than addedRows rows.
func TestInPlaceResetCounter(t *testing.T) {
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	if !st.Binary().Flavor.Changes().ImportKeepsCounter {
		t.Skipf("%s's import takes the counter from the imported file: no statement sets it back", st.Binary().Flavor)
	}
	schema := inplaceSchemaFor(st.Binary().Flavor) + `
CREATE TABLE uniq (id INT AUTO_INCREMENT PRIMARY KEY, code VARCHAR(10), UNIQUE KEY (code)) ENGINE=InnoDB;
INSERT INTO uniq (code) VALUES ('a'), ('b');
CREATE TABLE gapped (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO gapped (v) VALUES (1), (2), (3), (4), (5);
DELETE FROM gapped WHERE id = 2;
`
	m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	ref := openLease(t, leaseIn(t, p))
	many := "INSERT INTO audit (what) WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < " + strconv.Itoa(addedRows+1) + ") SELECT 'm' FROM s"
	// alters and deletes are the restore's statements: a table imported
	// costs DISCARD and IMPORT TABLESPACE, two ALTER TABLE statements, and
	// a third for its counter; one whose added rows are deleted, a DELETE
	// and the counter's ALTER TABLE. child is imported whenever parent
	// changed: parent's cascade reaches it.
	for _, tc := range []struct {
		name            string
		change          []string
		alters, deletes int64
	}{
		{"rows deleted", []string{"DELETE FROM child WHERE id = 3"}, 2, 0},
		{"a row inserted", []string{"INSERT INTO child (parent_id, note) VALUES (1, 'w')"}, 3, 0},
		{"an insert rolled back", []string{"BEGIN", "INSERT INTO child (parent_id, note) VALUES (1, 'r')", "ROLLBACK"}, 3, 0},
		// A duplicate key refuses the row once its value is drawn: the
		// counter moves with no row written (InnoDB). Only inserts: none
		// to delete, the rows counted.
		{"inserts refused", []string{"INSERT INTO uniq (code) VALUES ('a')", "INSERT INTO uniq (code) VALUES ('a')"}, 1, 1},
		{"the column updated", []string{"UPDATE child SET id = 100 WHERE id = 3"}, 3, 0},
		{"rows inserted into a table with rows", []string{"INSERT INTO gapped (v) VALUES (7), (8)", "INSERT INTO gapped VALUES (100, 9)"}, 1, 1},
		// parent has a trigger: the DELETE would run it.
		{"a row inserted into a table with a trigger", []string{"INSERT INTO parent (name) VALUES ('w')"}, 3 + 3, 0},
		// The row below the counter stays: the count differs, and the
		// table is imported after the DELETE.
		{"a row inserted into a gap", []string{"INSERT INTO gapped VALUES (2, 9)", "INSERT INTO gapped (v) VALUES (7)"}, 3, 1},
		// gapped was imported just above: its rows are kept, and the
		// update and insert are written back (TestInPlaceResetWriteBack):
		// one DELETE of the two rows, the counter's ALTER TABLE.
		{"a row inserted and one updated", []string{"INSERT INTO gapped (v) VALUES (7)", "UPDATE gapped SET v = 0 WHERE id = 1"}, 1, 1},
		// audit is empty in the template; parent's trigger writes it.
		{"an empty table written", []string{"INSERT INTO audit (what) VALUES ('a'), ('b')", "UPDATE audit SET what = 'c' WHERE id = 1"}, 1, 1},
		{"an empty table's insert rolled back", []string{"BEGIN", "INSERT INTO audit (what) VALUES ('r')", "ROLLBACK"}, 1, 1},
		{"an empty table written by a trigger", []string{"UPDATE parent SET name = 'd' WHERE id = 1"}, 3 + 3 + 1, 1},
		{"an empty table given many rows", []string{"SET SESSION cte_max_recursion_depth = 10000", many}, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused := func(q string) bool { return strings.Contains(q, "uniq") }
			got := resetCounting(t, p, ref, tc.change, refused, "Com_alter_table", "Com_delete")
			if got[0] != tc.alters {
				t.Errorf("the restore ran %d ALTER TABLE statement(s), want %d", got[0], tc.alters)
			}
			if got[1] != tc.deletes {
				t.Errorf("the restore ran %d DELETE statement(s), want %d", got[1], tc.deletes)
			}
		})
	}
}

// resetCounting has a holder of pool p run change (a statement refused
// may fail) and release its lease; the next lease, whose slot the
// reference lease ref is not on, must be the same slot after one
// in-place reset and verify clean against ref. It returns how much each
// of the server's status counters names moved during the reset.
func resetCounting(t *testing.T, p *Pool, ref *sql.DB, change []string, refused func(q string) bool, names ...string) []int64 {
	t.Helper()
	ctx := context.Background()
	l := leaseIn(t, p)
	conn, err := openLease(t, l).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range change {
		if _, err := conn.ExecContext(ctx, q); err != nil && (refused == nil || !refused(q)) {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	admin := slotAdminOf(p, l.Slot)
	moved := make([]int64, len(names))
	for i, n := range names {
		moved[i] = -globalStatus(t, admin, n)
	}
	inPlace := paths(p)[PathInPlace]
	if _, err := p.Release(ctx, l.ID, Dirty); err != nil {
		t.Fatal(err)
	}
	next := leaseIn(t, p)
	t.Cleanup(func() { p.Release(ctx, next.ID, Dirty) })
	if next.Slot != l.Slot || paths(p)[PathInPlace] != inPlace+1 {
		t.Fatalf("the next lease got slot %d after %d in-place reset(s), want slot %d after one", next.Slot, paths(p)[PathInPlace]-inPlace, l.Slot)
	}
	for i, n := range names {
		moved[i] += globalStatus(t, admin, n)
	}
	verifyClean(t, ref, openLease(t, next), strings.Join(change, "; "))
	return moved
}

// globalStatus reads the server's status counter name through admin.
func globalStatus(t *testing.T, admin *sql.DB, name string) int64 {
	t.Helper()
	var got string
	var n int64
	if err := admin.QueryRow("SHOW GLOBAL STATUS LIKE "+quote.String(name)).Scan(&got, &n); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return n
}

// On MySQL a small table's rows that a holder changed are written back
// from the template's rows, read once from the table just imported
// (inplace_writeback.go): the holder tries to leave deleted, updated,
// re-keyed and swapped rows, in tables of every column type written
// back, and the next holder sees the template (verify clean). Each
// restore's statements tell which way it went: DISCARD and IMPORT are two
// ALTER TABLE statements; a write back is a DELETE and an INSERT at most.
func TestInPlaceResetWriteBack(t *testing.T) {
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	if !st.Binary().Flavor.Changes().WriteBack {
		t.Skipf("%s's import costs what the statements do: tables are imported", st.Binary().Flavor)
	}
	schema := `
CREATE TABLE kept (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL, n INT, UNIQUE KEY (code)) ENGINE=InnoDB;
INSERT INTO kept VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', NULL), (4, 'd', 40);
CREATE TABLE typed (k1 INT, k2 VARCHAR(8), f FLOAT, d DOUBLE, dec1 DECIMAL(20,6), dt DATETIME(6), ts TIMESTAMP(3) NULL,
  tm TIME(2), y YEAR, b BIT(12), e ENUM('x','y','z'), st SET('p','q','r'), bin BINARY(4), vb VARBINARY(8), ch CHAR(6),
  l1 VARCHAR(20) CHARACTER SET latin1, bl BLOB, tx TEXT, u BIGINT UNSIGNED, g INT AS (k1 * 2) VIRTUAL,
  hid INT INVISIBLE DEFAULT 7, PRIMARY KEY (k1, k2)) ENGINE=InnoDB;
INSERT INTO typed (k1, k2, f, d, dec1, dt, ts, tm, y, b, e, st, bin, vb, ch, l1, bl, tx, u, hid) VALUES
  (1, 'a', 0.1, 1e-300, -12345678901234.123456, '2024-02-29 23:59:59.999999', '2024-03-31 02:30:00.123', '-12:34:56.78', 1901, b'101010101010', 'z', 'p,r',
   0x00FF0001, 0x00, 'ab  ', CONVERT(0x636166E9 USING latin1), 0x000102FF, 'multi
line', 18446744073709551615, 5),
  (2, 'b', -3.4e38, 2.2250738585072014e-308, 0, '1000-01-01 00:00:00', NULL, '00:00:00', 0, b'0', 'x', '', 0x41, '', '', '', '', '', 0, 6),
  (3, 'c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TABLE doc (id INT PRIMARY KEY, body JSON) ENGINE=InnoDB;
INSERT INTO doc VALUES (1, '{"a": 1.5}'), (2, '[1, 2]');
CREATE TABLE nokey (v INT) ENGINE=InnoDB;
INSERT INTO nokey VALUES (1), (2);
CREATE TABLE big (id INT PRIMARY KEY) ENGINE=InnoDB;
SET SESSION cte_max_recursion_depth = 10000;
INSERT INTO big WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ` + strconv.Itoa(writeBackRows+1) + `) SELECT n FROM s;
`
	m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	ref := openLease(t, leaseIn(t, p))
	type counts struct{ alters, deletes, inserts int64 }
	imported := counts{2, 0, 0}
	for _, tc := range []struct {
		name   string
		change []string
		want   counts
	}{
		// The first restore of each table imports it and keeps its rows.
		{"kept imported", []string{"DELETE FROM kept WHERE id = 2"}, imported},
		{"rows deleted", []string{"DELETE FROM kept WHERE id IN (1, 4)"}, counts{0, 0, 1}},
		{"a delete rolled back", []string{"BEGIN", "DELETE FROM kept", "ROLLBACK"}, counts{0, 0, 0}},
		// Nothing written: nothing read again either (MySQL's mark counts
		// statements); the next holder's update is still seen.
		{"nothing written", []string{"SELECT 1"}, counts{0, 0, 0}},
		{"a row updated", []string{"UPDATE kept SET n = 0 WHERE id = 3"}, counts{0, 1, 1}},
		{"a key updated", []string{"UPDATE kept SET id = 100 WHERE id = 1"}, counts{0, 1, 1}},
		// The unique values of two rows swapped: the rows that differ go
		// before the template's come back, so the key refuses nothing.
		{"unique values swapped", []string{"UPDATE kept SET code = 'z' WHERE id = 1", "UPDATE kept SET code = 'a' WHERE id = 2", "UPDATE kept SET code = 'b' WHERE id = 1"}, counts{0, 1, 1}},
		{"a row deleted and one put back changed", []string{"DELETE FROM kept WHERE id = 4", "INSERT INTO kept VALUES (4, 'd', 41), (5, 'e', 50)"}, counts{0, 1, 1}},
		{"typed imported", []string{"DELETE FROM typed WHERE k1 = 3"}, imported},
		{"typed rows deleted", []string{"DELETE FROM typed"}, counts{0, 0, 1}},
		{"typed rows updated", []string{"UPDATE typed SET f = f + 1, dt = NOW(), hid = 0, b = b'1', l1 = 'x' WHERE k1 < 3"}, counts{0, 1, 1}},
		// Not written back: a JSON column, no primary key, too many rows.
		{"a JSON column", []string{"DELETE FROM doc WHERE id = 1"}, imported},
		{"a JSON column again", []string{"DELETE FROM doc WHERE id = 2"}, imported},
		{"no primary key", []string{"DELETE FROM nokey"}, imported},
		{"no primary key again", []string{"DELETE FROM nokey"}, imported},
		{"too many rows", []string{"DELETE FROM big WHERE id = 1"}, imported},
		{"too many rows again", []string{"DELETE FROM big WHERE id = 2"}, imported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := resetCounting(t, p, ref, tc.change, nil, "Com_alter_table", "Com_delete", "Com_insert")
			if got := (counts{n[0], n[1], n[2]}); got != tc.want {
				t.Errorf("the restore ran %d ALTER TABLE, %d DELETE and %d INSERT statement(s), want %d, %d and %d", got.alters, got.deletes, got.inserts, tc.want.alters, tc.want.deletes, tc.want.inserts)
			}
		})
	}
}

// A row written back that is not the template's (kept rows gone wrong,
// played here by changing them) gives another checksum: the table is
// imported after all, its rows no longer written back, and the next
// holder sees the template.
func TestInPlaceResetWriteBackChecksum(t *testing.T) {
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	if !st.Binary().Flavor.Changes().WriteBack {
		t.Skipf("%s's import costs what the statements do: tables are imported", st.Binary().Flavor)
	}
	m := templatetest.Build(t, st, "app", "CREATE TABLE kept (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB;\nINSERT INTO kept VALUES (1, 'a'), (2, 'b');\n", template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	ref := openLease(t, leaseIn(t, p))
	ctx := context.Background()
	kept := tableRef{"app", "kept"}
	for i := range 3 {
		bad := i == 1
		l := leaseIn(t, p)
		if _, err := openLease(t, l).Exec("DELETE FROM kept WHERE id = 2"); err != nil {
			t.Fatal(err)
		}
		if bad {
			tr := p.rows.get(kept)
			if tr == nil || tr.err != nil {
				t.Fatalf("the rows of %s are not kept after an import: %+v", kept, tr)
			}
			for k, r := range tr.rows {
				tr.rows[k] = bytes.Replace(r, []byte("\x01b"), []byte("\x01X"), 1) // v 'b' of row 2
			}
		}
		admin := slotAdminOf(p, l.Slot)
		alters := globalStatus(t, admin, "Com_alter_table")
		if _, err := p.Release(ctx, l.ID, Dirty); err != nil {
			t.Fatal(err)
		}
		next := leaseIn(t, p)
		// Each round imports: the first keeps the rows, the second finds
		// the written back rows' checksum wrong, the third no rows kept.
		if got := globalStatus(t, admin, "Com_alter_table") - alters; got != 2 {
			t.Errorf("round %d: the restore ran %d ALTER TABLE statement(s), want 2 (DISCARD and IMPORT)", i, got)
		}
		verifyClean(t, ref, openLease(t, next), fmt.Sprintf("round %d", i))
		if _, err := p.Release(ctx, next.ID, Dirty); err != nil {
			t.Fatal(err)
		}
	}
	if tr := p.rows.get(kept); tr == nil || tr.err == nil || !strings.Contains(tr.err.Error(), "checksum") {
		t.Errorf("after a checksum that differed, %s's rows are kept as %+v, want left out for the checksum", kept, tr)
	}
}
