package template_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// binlogSource starts a source server with its binary log on (so its change
// marker is a GTID position) holding g.t with one row.
func binlogSource(t *testing.T) (*mariadb.Instance, *sql.DB) {
	t.Helper()
	in := mariadbtest.StartBinlog(t)
	db := mariadbtest.Open(t, in, "")
	mariadbtest.Exec(t, db, "CREATE DATABASE g", "CREATE TABLE g.t (id INT PRIMARY KEY)", "INSERT INTO g.t VALUES (1)")
	return in, db
}

func sourceURL(in *mariadb.Instance) string {
	return "mysql://root@localhost/?socket=" + in.Config.Socket()
}

// TestTemplateFiledUnderTheMarkerOfItsData: a source that changes after
// the build has read its change marker (GTID position) and before the
// capture's snapshot must not leave a template filed under the older
// position than the data it holds. The template is filed under the
// position of its snapshot, so the next build of the unchanged source
// finds it instead of capturing again, and its record names that position.
func TestTemplateFiledUnderTheMarkerOfItsData(t *testing.T) {
	for _, method := range []string{"logical", "physical"} {
		t.Run(method, func(t *testing.T) { testFiledUnderMarker(t, method) })
	}
}

func testFiledUnderMarker(t *testing.T, method string) {
	mariadbtest.SkipOnMySQL(t, "the change marker is MariaDB's @@gtid_binlog_pos; MySQL sources have none yet (issue 21)")
	st := templatetest.NewBuilder(t, "auto")
	in, db := binlogSource(t)
	opt := template.BuildOptions{Name: "g", Profile: mariadb.DefaultProfile(), Server: template.ServerSource{DSN: sourceURL(in), Method: method}}
	if method == "physical" {
		p, err := st.Plan(context.Background(), opt)
		if err != nil {
			t.Skipf("no physical capture here: %v", err)
		}
		p.Close()
	}
	// The capture announces itself once the source is probed and before
	// the snapshot: the source changes right then.
	var once sync.Once
	st.Progress = func(format string, args ...any) {
		if strings.HasPrefix(format, "capturing ") {
			once.Do(func() { mariadbtest.Exec(t, db, "INSERT INTO g.t VALUES (2)") })
		}
	}
	m1, built, err := st.Build(context.Background(), opt)
	if err != nil || !built {
		t.Fatalf("first build: built=%v err=%v", built, err)
	}
	var pos string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m1.Inputs[0], "marker=gtid "+pos) {
		t.Errorf("the template holds the source at GTID %s but its record says %q", pos, m1.Inputs[0])
	}
	r, err := st.Start(context.Background(), m1, "marker-check")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tdb, err := r.Inst.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	var rows int
	if err := tdb.QueryRow("SELECT COUNT(*) FROM g.t").Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("the template holds %d rows (err %v), want 2: the change before the snapshot", rows, err)
	}
	st.Progress = nil
	m2, built, err := st.Build(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if built || m2.Hash != m1.Hash {
		t.Errorf("the source did not change since the snapshot, yet the second build captured it again (built=%v, hash %s, first %s): the first template was filed under the position read before the change",
			built, m2.Hash[:12], m1.Hash[:12])
	}
}

// TestRekeyedCaptureMeetsItsTemplate: two builds probed at the same
// position, the source moved on before either snapshot: the first is
// filed under the snapshot's position, the second finds it there and
// throws its own copy away, leaving one template and no build directory.
func TestRekeyedCaptureMeetsItsTemplate(t *testing.T) {
	mariadbtest.SkipOnMySQL(t, "the change marker is MariaDB's @@gtid_binlog_pos; MySQL sources have none yet (issue 21)")
	st := templatetest.NewBuilder(t, "auto")
	in, db := binlogSource(t)
	ctx := context.Background()
	opt := template.BuildOptions{Name: "g", Profile: mariadb.DefaultProfile(), Server: template.ServerSource{DSN: sourceURL(in), Method: "logical"}}
	p1, err := st.Plan(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	p2, err := st.Plan(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if p1.Hash != p2.Hash {
		t.Fatalf("two probes of an unchanged source: keys %s and %s", p1.Hash[:12], p2.Hash[:12])
	}
	mariadbtest.Exec(t, db, "INSERT INTO g.t VALUES (2)")
	m1, built, err := p1.Build(ctx)
	if err != nil || !built || m1.Hash == p1.Hash {
		t.Fatalf("first build: built=%v err=%v re-keyed=%v; want built under the snapshot's position", built, err, m1 != nil && m1.Hash != p1.Hash)
	}
	m2, built, err := p2.Build(ctx)
	if err != nil || built || m2.Hash != m1.Hash {
		t.Fatalf("second build of the same position: built=%v err=%v same=%v; want the first one's template", built, err, m2 != nil && m2.Hash == m1.Hash)
	}
	if list, _ := st.Catalog().List(); len(list) != 1 {
		t.Errorf("templates after both builds: %d, want 1", len(list))
	}
	ents, _ := os.ReadDir(filepath.Join(st.Catalog().Root().Data(), "templates"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".build-") || e.Name() == "."+p1.Hash+".lock" {
			t.Errorf("left behind: templates/%s", e.Name())
		}
	}
}
