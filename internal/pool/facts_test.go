package pool

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/exportmeta"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// A template's build reads its facts (exportmeta.Facts) on its own server
// and they are what a slot of it reads; where the in-place reset sets the
// AUTO_INCREMENT counters back (MySQL), the build's are the next ids a
// fresh slot hands out, and again after an in-place reset, a table whose
// top rows the template deleted too, and one it has empty (whose added
// rows the reset deletes there). A pool's first slot takes the facts
// from the template rather than opening every table for them: facts that
// say the template has a sequence make its slots reset fully, with that
// reason.
func TestTemplateFacts(t *testing.T) {
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	f := st.Binary().Flavor
	schema := inplaceSchemaFor(f) + `
CREATE TABLE gap (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO gap VALUES (), (), (), (), ();
DELETE FROM gap WHERE id > 3;
`
	m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
	dir := filepath.Join(st.Catalog().Dir(m.Hash), exportmeta.Dir)
	built, err := exportmeta.LoadFacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if built == nil {
		t.Fatal("the build wrote no facts")
	}
	want := []exportmeta.Cascade{{Parent: exportmeta.Table{DB: "app", Name: "parent"}, Child: exportmeta.Table{DB: "app", Name: "child"}}}
	if !reflect.DeepEqual(built.Cascades, want) || built.Sequences != 0 {
		t.Errorf("the build's facts: %d sequences, cascades %+v; want none and %+v", built.Sequences, built.Cascades, want)
	}
	// The next id of each table with a counter, as a fresh server of the
	// template hands it out.
	next := map[string]uint64{"audit": 1, "child": 4, "gap": 6, "parent": 4}
	inserts := map[string]string{"audit": "INSERT INTO audit (what) VALUES ('x')", "child": "INSERT INTO child (note) VALUES ('x')",
		"gap": "INSERT INTO gap VALUES ()", "parent": "INSERT INTO parent (name) VALUES ('x')"}
	keeps := f.Changes().ImportKeepsCounter
	if keeps != (len(built.Counters) == len(next)) {
		t.Errorf("the build's facts hold %d AUTO_INCREMENT counters (%+v), want %d only where an import keeps a table's own (%v)", len(built.Counters), built.Counters, len(next), keeps)
	}
	// audit has a trigger of parent's writing into it, not one of its
	// own: the reset may empty it. gap has a counter and rows, and no
	// cascade reaches it; parent has a trigger, and parent's cascade
	// reaches child's rows.
	wantCounted := []exportmeta.Counted{{Table: exportmeta.Table{DB: "app", Name: "audit"}, Column: "id"}, {Table: exportmeta.Table{DB: "app", Name: "gap"}, Rows: 3, Column: "id"}}
	if f.Changes().DeleteAdded && !reflect.DeepEqual(built.Counted, wantCounted) {
		t.Errorf("the build's counted tables are %+v, want %+v", built.Counted, wantCounted)
	}
	for _, c := range built.Counters {
		if c.Table.DB != "app" || c.Next != next[c.Table.Name] {
			t.Errorf("the build's counter of %+v is %d, want the next id a fresh slot hands out, %d", c.Table, c.Next, next[c.Table.Name])
		}
	}

	up := func() *Pool {
		p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 1, Profile: mariadb.DefaultProfile()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Down(context.Background()) })
		return p
	}
	p := up()
	read, err := exportmeta.ReadFacts(context.Background(), slotAdminOf(p, 0), f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(built.Cascades, read.Cascades) || built.Sequences != read.Sequences || !reflect.DeepEqual(built.Counted, read.Counted) {
		t.Errorf("the build's facts %+v differ from what a slot reads, %+v", built, read)
	}
	// The next ids on the fresh slot, then on it after an in-place reset
	// of those inserts.
	for _, when := range []string{"fresh", "after an in-place reset"} {
		l := leaseIn(t, p)
		db := openLease(t, l)
		for table, q := range inserts {
			res, err := db.Exec(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if id, _ := res.LastInsertId(); uint64(id) != next[table] {
				t.Errorf("%s: the next id of %s is %d, want %d", when, table, id, next[table])
			}
		}
		db.Close()
		if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, p, "the second reset", func() bool {
		var n int64
		for _, c := range p.stats.ResetPaths {
			n += c
		}
		return n >= 2
	})
	if got := paths(p); got[PathInPlace] != 2 {
		t.Errorf("reset paths %v, want both in place", got)
	}
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Facts that name a sequence the template does not have: the first
	// slot's base takes them.
	templateBases.Range(func(k, _ any) bool { templateBases.Delete(k); return true })
	lie := *built
	lie.Sequences = 1
	if err := exportmeta.WriteFacts(dir, &lie); err != nil {
		t.Fatal(err)
	}
	p = up()
	l := leaseIn(t, p)
	if _, err := openLease(t, l).Exec("INSERT INTO parent (name) VALUES ('new')"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
		t.Fatal(err)
	}
	l = leaseIn(t, p)
	defer p.Release(context.Background(), l.ID, Unchanged)
	if got := paths(p); got[PathFull+":"+FallbackIneligible] != 1 {
		t.Errorf("reset paths %v, want one full reset for the template's sequence (%s)", got, FallbackIneligible)
	}
	p.mu.Lock()
	why := p.slots[0].inplace.ineligible
	p.mu.Unlock()
	if !strings.Contains(why, "1 sequence") {
		t.Errorf("the slot's base is ineligible for %q, want the facts' sequence", why)
	}
}
