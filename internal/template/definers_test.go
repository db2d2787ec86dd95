package template_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestImportReownsDefiners: an archive whose objects run as root (made by
// an older pristine, or crafted) is re-owned at import, before any server
// serves it: no clone runs a view, trigger, routine or event as root.
func TestImportReownsDefiners(t *testing.T) {
	ctx := context.Background()
	src := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, src, "app", schema+`CREATE VIEW v AS SELECT * FROM parent;
CREATE PROCEDURE p() SELECT COUNT(*) FROM parent;
CREATE TRIGGER tr BEFORE INSERT ON child FOR EACH ROW SET NEW.parent_id = NEW.parent_id;
CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO DELETE FROM parent WHERE 0;
`, template.BuildOptions{})
	// Give the objects back to root, as an older pristine left them.
	r, err := src.Start(ctx, m, "craft")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	db, err := r.Inst.Open("")
	if err != nil {
		t.Fatal(err)
	}
	my := src.Binary().Flavor == mariadb.MySQL
	routines := []string{ // MariaDB's, in its tables
		"UPDATE mysql.proc SET definer = 'root@localhost' WHERE db = 'app'",
		"UPDATE mysql.event SET definer = 'root@localhost' WHERE db = 'app'",
	}
	eventDefiners := "SELECT CONVERT(definer USING utf8mb4) FROM mysql.event WHERE db = 'app'"
	if my { // MySQL's, in its data dictionary
		routines = []string{
			"DROP PROCEDURE app.p",
			"CREATE DEFINER=`root`@`localhost` PROCEDURE app.p() SELECT COUNT(*) FROM app.parent",
			"ALTER DEFINER=`root`@`localhost` EVENT app.e COMMENT ''",
		}
		eventDefiners = "SELECT DEFINER FROM information_schema.EVENTS WHERE EVENT_SCHEMA = 'app'"
	}
	for _, q := range append(append([]string{
		"ALTER DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW app.v AS SELECT * FROM app.parent"}, routines...),
		"DROP TRIGGER app.tr",
		"CREATE DEFINER=`root`@`localhost` TRIGGER app.tr BEFORE INSERT ON app.child FOR EACH ROW SET NEW.parent_id = NEW.parent_id",
		"SET GLOBAL innodb_fast_shutdown=0",
	) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	if err := r.Inst.Stop(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", r.Inst.Config.Datadir, filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	meta, err := os.ReadFile(filepath.Join(src.Catalog().Dir(m.Hash), "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0o600); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := archive.Pack(ctx, dir, &b, archive.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	dst := templatetest.NewBuilder(t, "auto")
	got, imported, err := dst.Import(ctx, &b, archive.UnpackOptions{})
	if err != nil || !imported {
		t.Fatalf("import: %v", err)
	}
	if got.Definers == nil || len(got.Definers.Reowned) != 4 {
		t.Errorf("meta.json of the import records re-owned objects %+v, want the 4 of root", got.Definers)
	}
	run, err := dst.Start(ctx, got, "check")
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	cdb, err := run.Inst.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer cdb.Close()
	rows, err := cdb.Query(`SELECT DEFINER FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'app'
		UNION ALL SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'app'
		UNION ALL SELECT DEFINER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'app'
		UNION ALL ` + eventDefiners)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var definers []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		definers = append(definers, d)
	}
	sort.Strings(definers)
	owner := mariadb.OwnerUser + "@" + mariadb.OwnerHost
	if want := strings.Repeat(owner+" ", 4); strings.Join(definers, " ")+" " != want {
		t.Errorf("the imported template's DEFINERs are %v, want %s for all 4", definers, owner)
	}
}

// TestSessionReownsAndCutsTheClient: an API build's client (the build
// account, every privilege) makes objects as itself and keeps its
// connection open while the build finishes: the objects are re-owned and
// the connection is killed before the pass, so nothing it does after can
// leave an object running as root in the template.
func TestSessionReownsAndCutsTheClient(t *testing.T) {
	ctx := context.Background()
	st := templatetest.NewBuilder(t, "auto")
	ss, _, err := st.Begin(ctx, template.BuildOptions{Name: "api", Key: "sha256:definers", Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	client, err := sql.Open("mysql", dsn.TCP(ss.Inst.Config.Port, ss.Meta.User, ss.Meta.Password, "api"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	conn, err := client.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY)",
		"CREATE VIEW v AS SELECT id FROM t",
		"CREATE DEFINER='root'@'localhost' PROCEDURE p() SELECT COUNT(*) FROM t",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The client goes on making root's procedures while the build
	// finishes, on the connection it opened before.
	made := make(chan int)
	go func() {
		n := 0
		for ; ; n++ {
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE DEFINER='root'@'localhost' PROCEDURE p%d() SELECT 1", n)); err != nil {
				break
			}
		}
		made <- n
	}()
	time.Sleep(50 * time.Millisecond)
	m, err := ss.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := <-made
	t.Logf("the client made %d procedures before its connection was cut", n)
	if m.Definers == nil || len(m.Definers.Reowned) < 2 {
		t.Errorf("re-owned %+v, want the view (was pristine@%%) and the procedures (was root@localhost)", m.Definers)
	}
	r, err := st.Start(ctx, m, "api-check")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	db, err := r.Inst.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var d string
	if err := db.QueryRow(`SELECT GROUP_CONCAT(DISTINCT d) FROM (SELECT DEFINER d FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'api'
		UNION ALL SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'api') x`).Scan(&d); err != nil {
		t.Fatal(err)
	}
	if d != mariadb.OwnerUser+"@"+mariadb.OwnerHost {
		t.Errorf("the API build's objects run as %s, want the owner account", d)
	}
}

// TestImportOfASecuredTemplateChangesNothing: the pass is idempotent: a
// template secured here and imported elsewhere has nothing left to
// re-own or reduce.
func TestImportOfASecuredTemplateChangesNothing(t *testing.T) {
	src := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, src, "app", schema+`CREATE VIEW v AS SELECT * FROM parent;
CREATE USER rep@'%';
GRANT SELECT ON *.* TO rep@'%';
GRANT SELECT ON `+"`%`"+`.* TO rep@'%';
CREATE DEFINER=rep@'%' VIEW w AS SELECT * FROM parent;
`, template.BuildOptions{})
	if m.Definers == nil || len(m.Definers.Reowned) != 1 || len(m.Definers.Reduced) != 1 {
		t.Fatalf("the build re-owned and reduced %+v, want v and rep", m.Definers)
	}
	raw := craft(t, src, m, func(map[string]any) {})
	dst := templatetest.NewBuilder(t, "auto")
	got, imported, err := dst.Import(context.Background(), bytes.NewReader(raw), archive.UnpackOptions{})
	if err != nil || !imported {
		t.Fatalf("import: %v", err)
	}
	if got.Definers == nil || len(got.Definers.Reowned)+len(got.Definers.Reduced)+len(got.Definers.Dropped) != 0 {
		t.Errorf("importing a secured template changed %+v, want nothing", got.Definers)
	}
}
