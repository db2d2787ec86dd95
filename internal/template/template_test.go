package template_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const schema = `CREATE TABLE parent (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB;
CREATE TABLE child (id INT PRIMARY KEY, parent_id INT, KEY (parent_id),
  FOREIGN KEY (parent_id) REFERENCES parent (id)) ENGINE=InnoDB;
INSERT INTO child VALUES (1, 1), (2, 2);
INSERT INTO parent VALUES (1, 'a'), (2, 'b');
`

func TestBuildIsContentAddressed(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	in := writeFile(t, t.TempDir(), "s.sql", schema)
	opt := template.BuildOptions{Name: "app", FromSQL: in, Profile: mariadb.DefaultProfile(), Workers: 2}
	m, built, err := st.Build(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if !built || m.Database() != "app" || m.Bytes == 0 {
		t.Fatalf("first build: built=%v meta=%+v", built, m)
	}
	m2, built, err := st.Build(context.Background(), opt)
	if err != nil || built || m2.Hash != m.Hash {
		t.Fatalf("second build of the same inputs: built=%v hash %s vs %s, err %v", built, m2.Hash, m.Hash, err)
	}
	// A changed input is a new template.
	writeFile(t, filepath.Dir(in), "s.sql", schema+"INSERT INTO parent VALUES (3, 'c');\n")
	m3, built, err := st.Build(context.Background(), opt)
	if err != nil || !built || m3.Hash == m.Hash {
		t.Fatalf("build after a change: built=%v same hash=%v err=%v", built, m3.Hash == m.Hash, err)
	}
	got, err := st.Catalog().Get("app")
	if err != nil || got.Hash != m3.Hash {
		t.Fatalf("Get(app) = %v, %v; want the newest build", got, err)
	}
	all, _ := st.Catalog().List()
	if len(all) != 2 {
		t.Fatalf("List: %d templates, want 2", len(all))
	}
	removed, err := st.Catalog().GC(m3.Bytes, nil)
	if err != nil || len(removed) != 1 || removed[0].Hash != m.Hash {
		t.Fatalf("GC kept the wrong one: removed %v, err %v", removed, err)
	}
	if err := st.Catalog().Remove(m3, func(string) bool { return true }); !errors.Is(err, catalog.ErrInUse) {
		t.Fatalf("Remove of a template in use = %v, want ErrInUse", err)
	}
	if err := st.Catalog().Remove(m3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Catalog().Get("app"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Get after Remove = %v", err)
	}
}

func TestBuildFailureNamesLineAndLeavesNothing(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	in := writeFile(t, t.TempDir(), "broken.sql", "CREATE TABLE a (id INT PRIMARY KEY);\n\nINSERT INTO a VALUES (1);\nINSERT INTO nope VALUES (1);\n")
	_, _, err := st.Build(context.Background(), template.BuildOptions{Name: "broken", FromSQL: in, Profile: mariadb.DefaultProfile()})
	if err == nil || !strings.Contains(err.Error(), "broken.sql:4") {
		t.Fatalf("error = %v, want one naming broken.sql:4", err)
	}
	ents, _ := os.ReadDir(filepath.Join(st.Catalog().Root().Data(), "templates"))
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("left behind after a failed build: %s", e.Name())
		}
	}
	if k := mariadb.KillOrphans(st.Catalog().Root().Data()); len(k) > 0 {
		t.Errorf("a server was left running: %v", k)
	}
}

func TestInitCmdGetsEnvironment(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	out := filepath.Join(t.TempDir(), "env.txt")
	cmd := `env | grep -E '^(DATABASE_URL|MYSQL_[A-Z_]+)=' | sort > ` + out + ` && ` + mariadbtest.Client("mariadb") + ` --no-defaults -h"$MYSQL_HOST" -P"$MYSQL_PORT" -u"$MYSQL_USER" "$MYSQL_DATABASE" -e 'CREATE TABLE migrated (id INT PRIMARY KEY)'`
	m, _, err := st.Build(context.Background(), template.BuildOptions{Name: "mig", InitCmd: cmd, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"DATABASE_URL=mysql://pristine:", "MYSQL_HOST=127.0.0.1", "MYSQL_PORT=", "MYSQL_UNIX_PORT=", "MYSQL_USER=pristine", "MYSQL_PWD=", "MYSQL_DATABASE=mig"} {
		if !strings.Contains(string(b), v) {
			t.Errorf("init command environment lacks %s:\n%s", v, b)
		}
	}
	if _, err := os.Stat(filepath.Join(st.Catalog().DataDir(m.Hash), "mig", "migrated.ibd")); err != nil {
		t.Errorf("the init command's table is not in the template: %v", err)
	}
	_, _, err = st.Build(context.Background(), template.BuildOptions{Name: "bad", InitCmd: "exit 3", Profile: mariadb.DefaultProfile()})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("failing init command: %v", err)
	}
}

func TestDBsPerSlot(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	in := writeFile(t, t.TempDir(), "s.sql", schema)
	m, _, err := st.Build(context.Background(), template.BuildOptions{Name: "k", FromSQL: in, DBsPerSlot: 3, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Databases, ",") != "k,k_2,k_3" {
		t.Fatalf("databases = %v", m.Databases)
	}
	withView := writeFile(t, t.TempDir(), "v.sql", schema+"CREATE VIEW v AS SELECT * FROM parent;\n")
	_, _, err = st.Build(context.Background(), template.BuildOptions{Name: "kv", FromSQL: withView, DBsPerSlot: 2, Profile: mariadb.DefaultProfile()})
	if !errors.Is(err, template.ErrNotCopyable) || !strings.Contains(err.Error(), "view `kv`.`v`") {
		t.Fatalf("a view with --dbs-per-slot: %v, want a refusal naming the view", err)
	}
}

// TestRebuildAndOlderTemplates: --rebuild replaces a template (it used to
// wait forever on its own lock), and a template whose accounts an older
// pristine left unsecured is refused by Start and built again, not reused.
func TestRebuildAndOlderTemplates(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	in := writeFile(t, t.TempDir(), "s.sql", schema)
	opt := template.BuildOptions{Name: "app", FromSQL: in, Profile: mariadb.DefaultProfile()}
	first, _, err := st.Build(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Rebuild = true
	again, built, err := st.Build(context.Background(), opt)
	if err != nil || !built || !again.Created.After(first.Created) {
		t.Fatalf("rebuild: built=%v err=%v", built, err)
	}
	// Make it look like an older pristine's.
	b, err := os.ReadFile(filepath.Join(st.Catalog().Dir(again.Hash), "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	// secured-1: root has a password, but objects may run as root.
	old := strings.Replace(string(b), `"accounts": "`+catalog.AccountsVersion+`",`, `"accounts": "secured-1",`, 1)
	if old == string(b) {
		t.Fatal("meta.json carries no accounts field")
	}
	if err := os.WriteFile(filepath.Join(st.Catalog().Dir(again.Hash), "meta.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	legacy, err := st.Catalog().Get("app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Start(context.Background(), legacy, "legacy"); !errors.Is(err, catalog.ErrInsecure) {
		t.Fatalf("Start of an unsecured template = %v, want ErrInsecure", err)
	}
	opt.Rebuild = false
	m, built, err := st.Build(context.Background(), opt)
	if err != nil || !built || m.Accounts != catalog.AccountsVersion {
		t.Fatalf("build over an unsecured template: built=%v accounts=%q err=%v", built, m.Accounts, err)
	}
}
