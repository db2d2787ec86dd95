package pool_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
	"github.com/pristinedb/pristine/internal/units"
)

// TestFork: a lease of the gadget template on btrfs writes, plants the
// definer gadget (the trigger path of TestSecurityDefinerGadgetTrigger)
// and leaves a transaction open; it is forked while the holder's
// connection stays open. The fork's leases see the committed write and
// neither the open transaction nor what the holder wrote after the fork;
// the holder's connection keeps working; the same key returns the same
// template without a second snapshot; the forking lease's credentials
// open no slot of the fork; the planted gadget runs the lease's function
// as no account with more than a lease has; the parent cannot be
// removed while the fork is kept.
func TestFork(t *testing.T) {
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	if st.Catalog().Backend().Name() != "btrfs" {
		t.Fatalf("backend %s on a btrfs scratch filesystem", st.Catalog().Backend().Name())
	}
	my := st.Binary().Flavor == mariadb.MySQL
	prof := mariadb.DefaultProfile()
	prof.Options = []string{"event_scheduler=ON"}
	m := templatetest.Build(t, st, "app", gadgetSchemaFor(my), template.BuildOptions{Profile: prof})
	ctx := context.Background()
	p, err := pool.Up(ctx, st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(ctx)
	l := lease(t, p)
	holder, err := open(t, l).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	mustExec(t, holder,
		"INSERT INTO customers VALUES (3, 'carol', 'carol@example.com')",
		"CREATE TABLE loot (u VARCHAR(200))",
		lootFunctionFor(t),
		"CREATE TABLE audit_real LIKE audit",
		"DROP TABLE audit",
		"CREATE SQL SECURITY INVOKER VIEW audit AS SELECT id, what FROM audit_real WHERE f()=1 WITH CHECK OPTION",
	)
	open1, err := open(t, l).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer open1.Close()
	mustExec(t, open1, "BEGIN", "INSERT INTO customers VALUES (4, 'uncommitted', 'u@example.com')")
	xa, err := open(t, l).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer xa.Close()
	mustExec(t, xa, "XA START 'fx'", "INSERT INTO customers VALUES (6, 'prepared', 'p@example.com')", "XA END 'fx'", "XA PREPARE 'fx'")

	var snaps atomic.Int32
	snap := func(dst string) error { snaps.Add(1); return p.Snapshot(ctx, l.ID, dst) }
	start := time.Now()
	f, built, err := st.Fork(ctx, m, template.ForkOptions{Name: "app-fixtures", Key: "fixtures-v1", Lease: l.ID}, snap)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fork of a lease of %s: %s (%s on disk)", m.Name, time.Since(start).Round(time.Millisecond), units.Bytes(f.Bytes))
	if !built || f.Parent != m.Hash || f.ParentName != "app" || catalog.CheckSecured(f) != nil || f.Definers == nil {
		t.Fatalf("fork: built %v, meta %+v", built, f)
	}
	// The lease's objects are re-owned like any build's administrative
	// ones (a lease account is one: mariadb.AdminDefiner).
	for _, o := range []string{"view `app`.`audit`", "function `app`.`f`"} {
		if !strings.Contains(strings.Join(f.Definers.Reowned, "\n"), o+" (was "+l.User+"@%)") {
			t.Errorf("the fork did not re-own the lease's %s: %+v", o, f.Definers)
		}
	}

	// The holder's connection survived and goes on; its open transaction too.
	mustExec(t, holder, "INSERT INTO customers VALUES (5, 'after', 'after@example.com')")
	mustExec(t, open1, "COMMIT")
	mustExec(t, xa, "XA ROLLBACK 'fx'")

	// The same key: the same template, no second snapshot.
	again, built, err := st.Fork(ctx, m, template.ForkOptions{Name: "app-fixtures", Key: "fixtures-v1", Lease: l.ID}, snap)
	if err != nil || built || again.Hash != f.Hash || snaps.Load() != 1 {
		t.Fatalf("second fork with the same key: built %v, hash %s (first %s), %d snapshots, %v", built, again.Hash, f.Hash, snaps.Load(), err)
	}

	// The parent stays while its fork is here.
	err = st.Catalog().CheckChildren(m)
	if !errors.Is(err, catalog.ErrHasChildren) || !strings.Contains(err.Error(), "app-fixtures") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("removing the fork's parent: %v, want a refusal naming the fork and --force", err)
	}

	// An export carries the fork like any template, its parent as
	// information.
	var arc bytes.Buffer
	if _, err := st.Export(ctx, f, &arc, archive.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	if im, _, err := st.Import(ctx, &arc, archive.UnpackOptions{}); err != nil || im.Parent != m.Hash || im.ParentName != "app" {
		t.Errorf("import of the fork's export: %v; parent %q (%s), want app (%s)", err, im.ParentName, im.Parent, m.Hash)
	}

	fp, err := pool.Up(ctx, st.Catalog(), st.Binary(), f, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer fp.Down(ctx)
	fl := lease(t, fp)
	fdb := open(t, fl)
	var names string
	if err := fdb.QueryRow("SELECT GROUP_CONCAT(name ORDER BY id) FROM customers").Scan(&names); err != nil || names != "ann,bob,carol" {
		t.Errorf("the fork's customers: %q, %v; want ann,bob,carol (the committed write, not the open or prepared transactions nor the write after the fork)", names, err)
	}
	if rows, err := slotAdmin(t, st, fl).Query("XA RECOVER"); err != nil {
		t.Error(err)
	} else {
		if rows.Next() {
			t.Error("the fork holds the lease's prepared XA transaction")
		}
		rows.Close()
	}

	// The forking lease's account is in the fork, locked: its holder's
	// password opens no slot of the fork.
	for _, addr := range []string{dsn.Socket(fl.Socket, l.User, l.Password, fl.Database), fmt.Sprintf("%s:%s@tcp(%s:%d)/%s", l.User, l.Password, fl.Host, fl.Port, fl.Database)} {
		o, err := sql.Open("mysql", addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Ping(); err == nil {
			t.Errorf("logged in to a slot of the fork with the forking lease's credentials (%s)", l.User)
		}
		o.Close()
	}

	// The gadget the lease planted: the template's trigger writes the
	// lease's view, whose function runs as the trigger's DEFINER.
	fc, err := fdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	if _, err := fc.ExecContext(ctx, "INSERT INTO orders VALUES (10, 1, 1.00)"); err != nil {
		t.Logf("insert through the trigger: %v", err)
	}
	if users := checkLoot(t, slotAdmin(t, st, fl), fl); len(users) == 0 {
		t.Error("the lease's function never ran in the fork: the probe proves nothing")
	}
}

// TestForkAfterInPlaceReset: a lease of a slot whose server restored its
// tables in place (DISCARD and IMPORT TABLESPACE) writes rows and is
// forked; the fork's leases see them. Crash recovery does not apply the
// redo log to a tablespace imported since the server's start, so without
// flushPages the fork held the table as the reset left it (the
// template's one row, not the lease's 301).
func TestForkAfterInPlaceReset(t *testing.T) {
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	m := templatetest.Build(t, st, "app", "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;\nINSERT INTO t (v) VALUES ('template');\n", template.BuildOptions{})
	ctx := context.Background()
	p, err := pool.Up(ctx, st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(ctx)
	insert := "INSERT INTO t (v) VALUES " + strings.TrimSuffix(strings.Repeat("('lease'),", 300), ",")
	first := lease(t, p)
	if _, err := open(t, first).Exec(insert); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Release(ctx, first.ID, pool.Dirty); err != nil {
		t.Fatal(err)
	}
	l := lease(t, p) // the one slot, reset in place
	if n := p.Status(false).Stats.ResetPaths[pool.PathInPlace]; n != 1 {
		t.Fatalf("reset paths %v: want the one reset in place", p.Status(false).Stats.ResetPaths)
	}
	db := open(t, l)
	if _, err := db.Exec(insert); err != nil {
		t.Fatal(err)
	}
	f, _, err := st.Fork(ctx, m, template.ForkOptions{Name: "app-fork", Lease: l.ID}, func(dst string) error { return p.Snapshot(ctx, l.ID, dst) })
	if err != nil {
		t.Fatal(err)
	}
	fp, err := pool.Up(ctx, st.Catalog(), st.Binary(), f, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer fp.Down(ctx)
	var n int
	if err := open(t, lease(t, fp)).QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 301 {
		t.Fatalf("a lease of the fork has %d rows (%v), want 301: the template's and the lease's committed ones", n, err)
	}
}
