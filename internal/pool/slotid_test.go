package pool_test

// Root of one slot (a lease that escalated, played here by connecting as
// root@localhost with the admin secret) and a build account (every
// privilege, by design) try to write outside their own slot with the
// server's file writes. docs/security.md, "One slot, one uid".

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/svcuser"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: servers run under ids of their own only when pristine runs as root (docs/security.md)")
	}
}

// twoSlots brings up a pool of two slots of m and leases both.
func twoSlots(t *testing.T, st *template.Builder, m *catalog.Meta) (*pool.Pool, *pool.Lease, *pool.Lease) {
	t.Helper()
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	// Each slot is reset fully once (a table made: not in place), so on
	// btrfs it has its seed (Pool.seed), which the attacks try too.
	for _, l := range []*pool.Lease{lease(t, p), lease(t, p)} {
		if _, err := open(t, l).Exec("CREATE TABLE seeded (i INT)"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Release(context.Background(), l.ID, pool.Dirty); err != nil {
			t.Fatal(err)
		}
	}
	waitReady(t, p, 2)
	a, b := lease(t, p), lease(t, p)
	if a.Slot == b.Slot {
		t.Fatalf("both leases on slot %d", a.Slot)
	}
	return p, a, b
}

// slotData is the clone a lease's slot serves.
func slotData(st *template.Builder, m *catalog.Meta, l *pool.Lease) string {
	return filepath.Join(pool.Dir(st.Catalog(), m), fmt.Sprintf("%03d", l.Slot), "data")
}

// asSlotRoot connects to a lease's slot as root@localhost: what a lease
// that became root of its slot holds.
func asSlotRoot(t *testing.T, st *template.Builder, l *pool.Lease) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn.Socket(l.Socket, "root", st.Catalog().Admin(), ""))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// treeSum is every path under dir with its size and a hash of its bytes.
func treeSum(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.Type().IsRegular() {
			out[rel] = d.Type().String()
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%d %x", len(b), sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSums(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k+" (new)")
		}
	}
	return d
}

// plantLog points the general log at target and turns it on, as the
// review did; it returns the server's error, and turns the log off again.
func plantLog(db *sql.DB, target string) error {
	_, err := db.Exec("SET GLOBAL general_log_file = ?", target)
	if err == nil {
		_, err = db.Exec("SET GLOBAL general_log = ON")
		if err == nil {
			_, _ = db.Exec("SELECT 'planted'")
		}
	}
	_, _ = db.Exec("SET GLOBAL general_log = OFF")
	return err
}

// serverError reports whether err came from the server (not the driver).
func serverError(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me)
}

// TestSecuritySlotRootWritesOnlyItsSlot: root of one slot points
// general_log_file into the template's data directory, into another live
// slot's data directory and onto the template's aria_log_control (the
// review's reproduction of finding 3). Each must fail with a server error,
// and the template and the other slot stay as they were: a pool made after
// still starts and serves, the other slot still answers. On the copy
// backend (clones chowned as they are made) and btrfs (snapshots chowned
// after).
func TestSecuritySlotRootWritesOnlyItsSlot(t *testing.T) {
	needRoot(t)
	onBackends(t, func(t *testing.T, st *template.Builder, m *catalog.Meta) {
		tdata := st.Catalog().DataDir(m.Hash)
		before := treeSum(t, tdata)
		p, l0, l1 := twoSlots(t, st, m)
		// Each slot attacks the template and the other slot: whichever
		// id a slot has, neither may write outside its own clone.
		for _, pair := range [][2]*pool.Lease{{l0, l1}, {l1, l0}} {
			a, b := pair[0], pair[1]
			t.Run(fmt.Sprintf("slot %d", a.Slot), func(t *testing.T) { slotAttacks(t, st, m, a, b) })
		}
		if after := treeSum(t, tdata); len(diffSums(before, after)) > 0 {
			t.Errorf("the template changed: %v", diffSums(before, after))
		}
		var n int
		// The template still makes working slots.
		if err := p.Down(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(pool.Dir(st.Catalog(), m)); err == nil {
			t.Errorf("pool down left %s (seeds?)", pool.Dir(st.Catalog(), m))
		}
		if held := recordsUnder(t, pool.Dir(st.Catalog(), m)); len(held) > 0 {
			t.Errorf("ids still recorded after pool down: %v", held)
		}
		p2, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
		if err != nil {
			t.Fatalf("pool up after the attack: %v", err)
		}
		defer p2.Down(context.Background())
		if err := open(t, lease(t, p2)).QueryRow("SELECT COUNT(*) FROM canary").Scan(&n); err != nil {
			t.Errorf("a slot of the template after the attack: %v", err)
		}
	})
}

// slotAttacks: root of a's slot points the general log into the template,
// into b's live slot and onto both aria_log_control files.
func slotAttacks(t *testing.T, st *template.Builder, m *catalog.Meta, a, b *pool.Lease) {
	tdata := st.Catalog().DataDir(m.Hash)
	bdata := slotData(st, m, b)
	// A file the engine needs: MariaDB's aria_log_control; on MySQL (no
	// Aria) the data dictionary's mysql.ibd in the template and seed, and
	// the live slot's auto.cnf, which its server wrote and never rewrites.
	tctl, bctl := "aria_log_control", "aria_log_control"
	if st.Binary().Flavor == mariadb.MySQL {
		tctl, bctl = "mysql.ibd", "auto.cnf"
	}
	bAria, err := os.ReadFile(filepath.Join(bdata, bctl))
	if err != nil {
		t.Fatal(err)
	}
	root := asSlotRoot(t, st, a)
	targets := []struct{ name, target string }{
		{"into the template", filepath.Join(tdata, m.Databases[0], "x.txt")},
		{"into the template's top", filepath.Join(tdata, "x.txt")},
		{"into another slot", filepath.Join(bdata, m.Databases[0], "x.txt")},
		{"onto the template's " + tctl, filepath.Join(tdata, tctl)},
		{"onto another slot's " + bctl, filepath.Join(bdata, bctl)},
	}
	// InnoDB's files, which every server's id may write through group
	// svcuser.DataGID where they are the template's (on btrfs, in the
	// template, in seeds and in other slots' clones alike): only the
	// directories above them keep a server out.
	ibd := filepath.Join(m.Databases[0], "canary.ibd")
	targets = append(targets,
		struct{ name, target string }{"onto the template's canary.ibd", filepath.Join(tdata, ibd)},
		struct{ name, target string }{"onto another slot's canary.ibd", filepath.Join(bdata, ibd)})
	// On btrfs a slot's clone is a snapshot of its seed, which belongs to
	// the slot's own id: only root's seeds directory keeps the slot out.
	seed := filepath.Join(pool.Dir(st.Catalog(), m), ".seeds", fmt.Sprintf("%03d", a.Slot))
	if _, err := os.Stat(seed); err == nil {
		targets = append(targets,
			struct{ name, target string }{"into its own seed", filepath.Join(seed, m.Databases[0], "x.txt")},
			struct{ name, target string }{"onto its own seed's " + tctl, filepath.Join(seed, tctl)},
			struct{ name, target string }{"onto its own seed's canary.ibd", filepath.Join(seed, ibd)})
	} else if st.Catalog().Backend().Name() == "btrfs" {
		t.Errorf("no seed for slot %d on btrfs: %v", a.Slot, err)
	}
	for _, c := range targets {
		t.Run(c.name, func(t *testing.T) {
			err := plantLog(root, c.target)
			if err == nil {
				t.Errorf("root of slot %d pointed the general log at %s", a.Slot, c.target)
			} else if !serverError(err) {
				t.Errorf("the probe failed in the client, so it proves nothing: %v", err)
			}
			if strings.HasSuffix(c.target, "x.txt") {
				if _, err := os.Lstat(c.target); err == nil {
					t.Errorf("root of slot %d planted %s", a.Slot, c.target)
				}
			}
		})
	}
	// Its own slot it may still write: the probe's refusals above are
	// the guard, not a broken general log.
	own := filepath.Join(slotData(st, m, a), fmt.Sprintf("own-%d.log", a.Slot))
	if err := plantLog(root, own); err != nil {
		t.Errorf("root of a slot cannot log into its own clone: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(bdata, bctl)); err != nil || !bytes.Equal(got, bAria) {
		t.Errorf("the other slot's %s changed (err %v)", bctl, err)
	}
	var n int
	if err := open(t, b).QueryRow("SELECT COUNT(*) FROM canary").Scan(&n); err != nil {
		t.Errorf("the other slot no longer answers: %v", err)
	}
}

// procGroups returns the Groups: line of a process.
func procGroups(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "Groups:" {
			return f[1:]
		}
	}
	t.Fatalf("no Groups line in /proc/%d/status", pid)
	return nil
}

// procIDs returns the Uid: and Gid: lines' ids of a process.
func procIDs(t *testing.T, pid int) (uids, gids []string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 5 && f[0] == "Uid:":
			uids = f[1:]
		case len(f) == 5 && f[0] == "Gid:":
			gids = f[1:]
		}
	}
	if uids == nil || gids == nil {
		t.Fatalf("no Uid/Gid lines in /proc/%d/status", pid)
	}
	return uids, gids
}

// TestSecuritySlotsRunAsTheirOwnIDs: two slots' servers run under two
// different ids (real, effective, saved and filesystem uid and gid alike),
// neither root nor the shared servers' account; each owns its own clone;
// the template belongs to neither; and the ids are released when the pool
// goes down.
func TestSecuritySlotsRunAsTheirOwnIDs(t *testing.T) {
	needRoot(t)
	st, m := build(t, "auto", 1)
	p, a, b := twoSlots(t, st, m)
	shared, err := svcuser.Get()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range []*pool.Lease{a, b} {
		uids, gids := procIDs(t, serverPID(t, l))
		for _, set := range [][]string{uids, gids} {
			for _, id := range set {
				if id != uids[0] {
					t.Errorf("slot %d's server has mixed ids: Uid %v Gid %v", l.Slot, uids, gids)
				}
			}
		}
		if uids[0] == "0" || uids[0] == fmt.Sprint(shared.UID) {
			t.Errorf("slot %d's server runs as uid %s (root or the shared account %s)", l.Slot, uids[0], shared.Name)
		}
		ids = append(ids, uids[0])
	}
	if ids[0] == ids[1] {
		t.Errorf("two slots' servers run as the same uid %s", ids[0])
	}
	// The socket rule of docs/security.md: a slot's run directory is its
	// id's, 0750, group pristine, so members of the group reach the socket.
	for i, l := range []*pool.Lease{a, b} {
		fi, err := os.Stat(filepath.Dir(l.Socket))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fmt.Sprint(st.Uid) != ids[i] || int(st.Gid) != shared.GID || fi.Mode().Perm() != 0o750 {
			t.Errorf("slot %d's run directory: uid %d gid %d mode %v; want uid %s, group %s (%d), 0750", l.Slot, st.Uid, st.Gid, fi.Mode().Perm(), ids[i], svcuser.Name, shared.GID)
		}
	}
	for i, l := range []*pool.Lease{a, b} {
		if got := ownerOf(t, slotData(st, m, l)); got != ids[i] {
			t.Errorf("slot %d's clone belongs to uid %s, its server runs as %s", l.Slot, got, ids[i])
		}
		// Every file of the clone is the server's own, or one of the
		// template's shareable files it writes through its one group.
		if g := procGroups(t, serverPID(t, l)); len(g) != 1 || g[0] != fmt.Sprint(svcuser.DataGID) {
			t.Errorf("slot %d's server has supplementary groups %v; want only %d", l.Slot, g, svcuser.DataGID)
		}
		err := filepath.WalkDir(slotData(st, m, l), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			sys := fi.Sys().(*syscall.Stat_t)
			shared := int(sys.Gid) == svcuser.DataGID && fi.Mode().IsRegular() && fi.Mode().Perm()&0o060 == 0o060 && svcuser.Shareable(p)
			if fmt.Sprint(sys.Uid) != ids[i] && !shared {
				t.Errorf("slot %d: %s is %d:%d %v, neither its server's nor a shared file of the template's", l.Slot, p, sys.Uid, sys.Gid, fi.Mode())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := ownerOf(t, st.Catalog().DataDir(m.Hash)); got != fmt.Sprint(os.Geteuid()) {
		t.Errorf("the template belongs to uid %s, not to pristine's own user", got)
	}
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if held := recordsUnder(t, pool.Dir(st.Catalog(), m)); len(held) > 0 {
		t.Errorf("ids still recorded for the pool after pool down: %v", held)
	}
}

// groupOf is the group of path.
func groupOf(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Gid)
}

// ownerOf is the uid that owns path, as a string.
func ownerOf(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(fi.Sys().(*syscall.Stat_t).Uid)
}

// recordsUnder lists the id records naming a path under dir.
func recordsUnder(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(svcuser.IDDir)
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(svcuser.IDDir, e.Name()))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), dir+"/") {
			out = append(out, e.Name()+"="+strings.TrimSpace(string(b)))
		}
	}
	return out
}

// TestSecurityBuildServerCannotWriteTemplates: the account of an API build
// (every privilege on its build server, handed to a client) points the
// general log into another template and into the base it was cloned from;
// both fail, and the build server runs under an id of its own.
func TestSecurityBuildServerCannotWriteTemplates(t *testing.T) {
	needRoot(t)
	st, m := build(t, "auto", 1)
	ss, have, err := st.Begin(context.Background(), template.BuildOptions{Name: "api", Key: fmt.Sprint(time.Now().UnixNano()), Database: "api", Profile: mariadb.DefaultProfile()})
	if err != nil || have != nil {
		t.Fatalf("begin a build: %v (existing %v)", err, have)
	}
	defer ss.Abort()
	db, err := sql.Open("mysql", dsn.TCP(ss.Inst.Config.Port, ss.Meta.User, ss.Meta.Password, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tdata := st.Catalog().DataDir(m.Hash)
	before := treeSum(t, tdata)
	bases, _ := filepath.Glob(filepath.Join(st.Catalog().Root().Data(), "base", "*", "data"))
	if len(bases) == 0 {
		t.Fatal("no base data directory")
	}
	for _, target := range []string{
		filepath.Join(tdata, m.Databases[0], "x.txt"),
		filepath.Join(tdata, "aria_log_control"),
		filepath.Join(bases[0], "mysql", "x.txt"),
		filepath.Join(bases[0], "aria_log_control"),
	} {
		err := plantLog(db, target)
		if err == nil {
			t.Errorf("the build account pointed the general log at %s", target)
		} else if !serverError(err) {
			t.Errorf("the probe at %s failed in the client, so it proves nothing: %v", target, err)
		}
	}
	if after := treeSum(t, tdata); len(diffSums(before, after)) > 0 {
		t.Errorf("the template changed: %v", diffSums(before, after))
	}
	uids, _ := procIDs(t, ss.Inst.PID())
	if uids[0] == "0" || uids[0] == ownerOf(t, tdata) {
		t.Errorf("the build server runs as uid %s", uids[0])
	}
	if got := ownerOf(t, ss.Inst.Config.Datadir); got != uids[0] {
		t.Errorf("the build's data directory belongs to uid %s, its server runs as %s", got, uids[0])
	}
}

// TestSlotIDKeepsDDL: on a clone given to its slot's id (a btrfs snapshot
// chowned after but for the template's InnoDB files and tables'
// definitions, a copy made with the new owner), every statement that
// rewrites a definition file still works, as a lease and as root of the
// slot, on tables of each engine, a view, a trigger and sys's views. A
// file of the clone left to another owner fails here: CREATE OR REPLACE
// VIEW copies the old .frm's owner into its backup ("Can't copy ownership
// ... Operation not permitted").
func TestSlotIDKeepsDDL(t *testing.T) {
	needRoot(t)
	aria := "Aria"
	if mariadbtest.Binary(t).Flavor == mariadb.MySQL {
		aria = "MyISAM" // MySQL has no Aria
	}
	ddlSchema := schema + `CREATE TABLE my (id INT PRIMARY KEY, v INT) ENGINE=MyISAM;
CREATE TABLE ar (id INT PRIMARY KEY, v INT) ENGINE=` + aria + `;
INSERT INTO my VALUES (1, 1); INSERT INTO ar VALUES (1, 1);
CREATE VIEW v1 AS SELECT id, v FROM canary;
CREATE TRIGGER tr1 BEFORE INSERT ON my FOR EACH ROW SET NEW.v = NEW.v + 1;
`
	for _, kind := range []string{"copy", "btrfs"} {
		t.Run(kind, func(t *testing.T) {
			var st *template.Builder
			if kind == "btrfs" {
				st = templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
			} else {
				st = templatetest.NewBuilder(t, kind)
			}
			m := templatetest.Build(t, st, "app", ddlSchema, template.BuildOptions{})
			p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Down(context.Background())
			l := lease(t, p)
			data := slotData(st, m, l)
			uids, _ := procIDs(t, serverPID(t, l))
			// On btrfs the template's InnoDB files and tables'
			// definitions stay the template's, group svcuser.DataGID: the
			// statements below rename, rebuild and drop them through that
			// group. A view's definition is the slot's own.
			shared := 0
			_ = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
				if fi, lerr := os.Lstat(p); err == nil && lerr == nil {
					sys := fi.Sys().(*syscall.Stat_t)
					if kind == "btrfs" && int(sys.Gid) == svcuser.DataGID && svcuser.Shareable(p) {
						shared++
					} else if got := fmt.Sprint(sys.Uid); got != uids[0] {
						t.Errorf("%s belongs to uid %s, not to the slot's %s", p, got, uids[0])
					}
				}
				return nil
			})
			if kind == "btrfs" && shared == 0 {
				t.Error("no file of the btrfs clone is left to the template (group svcuser.DataGID)")
			}
			if kind == "btrfs" && st.Binary().Flavor != mariadb.MySQL {
				dbDir := filepath.Join(data, m.Databases[0])
				if g := groupOf(t, filepath.Join(dbDir, "canary.frm")); g != svcuser.DataGID {
					t.Errorf("canary.frm: group %d, want the template's (%d)", g, svcuser.DataGID)
				}
				if got := ownerOf(t, filepath.Join(dbDir, "v1.frm")); got != uids[0] {
					t.Errorf("the view's v1.frm belongs to uid %s, not to the slot's %s", got, uids[0])
				}
			}
			db := open(t, l)
			db.SetMaxOpenConns(1)
			for _, q := range []string{
				"ALTER TABLE canary COMMENT 'frm only'",
				"ALTER TABLE canary ALTER COLUMN v SET DEFAULT 'x'",
				"ALTER TABLE canary ADD COLUMN w INT",
				"ALTER TABLE my ADD COLUMN w INT, COMMENT 'm'",
				"ALTER TABLE ar ADD COLUMN w INT",
				"ALTER TABLE ar ENGINE=InnoDB",
				"RENAME TABLE my TO my2",
				"RENAME TABLE my2 TO my",
				"TRUNCATE TABLE my",
				"TRUNCATE TABLE ar",
				"OPTIMIZE TABLE canary",
				"RENAME TABLE canary TO canary2, canary2 TO canary",
				"ALTER TABLE child ENGINE=InnoDB",
				"ALTER TABLE child ADD INDEX (c), ALGORITHM=INPLACE",
				"REPAIR TABLE my",
				"CHECK TABLE my FOR UPGRADE",
				"ANALYZE TABLE my",
				"CREATE OR REPLACE VIEW v1 AS SELECT id FROM canary",
				"ALTER VIEW v1 AS SELECT id, v FROM canary",
				"RENAME TABLE v1 TO v2",
				"DROP VIEW v2",
				"DROP TRIGGER tr1",
				"CREATE TRIGGER tr2 BEFORE INSERT ON my FOR EACH ROW SET NEW.v = 2",
				"INSERT INTO my (id, v) VALUES (5, 1)",
				"ALTER DATABASE " + m.Databases[0] + " CHARACTER SET utf8mb4",
				"DROP TABLE child",
			} {
				if _, err := db.Exec(q); err != nil {
					t.Errorf("lease: %s: %v", q, err)
				}
			}
			root := asSlotRoot(t, st, l)
			for _, q := range []string{
				"CREATE OR REPLACE VIEW sys.version AS SELECT 1 AS v",
				"ALTER TABLE mysql.servers COMMENT 'x'",
				"DROP VIEW sys.host_summary",
			} {
				if _, err := root.Exec(q); err != nil {
					t.Errorf("root: %s: %v", q, err)
				}
			}
		})
	}
}

// TestSlotIDReleasedOnShrink: a slot retired to give its memory to another
// pool gives its server id back at once; the others keep theirs until the
// pool goes down.
func TestSlotIDReleasedOnShrink(t *testing.T) {
	needRoot(t)
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	dir := pool.Dir(st.Catalog(), m)
	if held := recordsUnder(t, dir); len(held) != 2 {
		t.Fatalf("ids recorded for a pool of 2: %v", held)
	}
	if n := p.Shrink(1); n != 1 {
		t.Fatalf("Shrink(1) retired %d slots", n)
	}
	if held := recordsUnder(t, dir); len(held) != 1 {
		t.Errorf("ids recorded after retiring one of 2 slots: %v", held)
	}
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if held := recordsUnder(t, dir); len(held) != 0 {
		t.Errorf("ids recorded after pool down: %v", held)
	}
}
