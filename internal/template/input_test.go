package template_test

import (
	"context"
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

// TestEmptyDumpRefused: a dump with no statements is refused, naming the
// file, and leaves no template.
func TestEmptyDumpRefused(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	in := writeFile(t, t.TempDir(), "empty.sql", "-- nothing but a comment\n\n")
	_, _, err := st.Build(context.Background(), template.BuildOptions{Name: "empty", FromSQL: in, Profile: mariadb.DefaultProfile()})
	if err == nil || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "no SQL statements") {
		t.Fatalf("build from an empty dump: %v; want a refusal naming %s", err, in)
	}
	if all, _ := st.Catalog().List(); len(all) != 0 {
		t.Fatalf("an empty dump left templates: %v", all)
	}
}

// TestDanglingForeignKeysReported: keys that reference a missing table or
// column, hidden by FOREIGN_KEY_CHECKS=0 during the load, are reported one
// by one, by name.
func TestDanglingForeignKeysReported(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	var lines []string
	st.Progress = func(format string, args ...any) { lines = append(lines, format) }
	sql := `SET FOREIGN_KEY_CHECKS=0;
CREATE TABLE parent (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE good (id INT PRIMARY KEY, p INT, CONSTRAINT fk_good FOREIGN KEY (p) REFERENCES parent (id)) ENGINE=InnoDB;
CREATE TABLE orphan (id INT PRIMARY KEY, g INT, CONSTRAINT fk_gone FOREIGN KEY (g) REFERENCES ghost (id)) ENGINE=InnoDB;
`
	wants := []string{"app.orphan.fk_gone (g) references app.ghost(id), but table app.ghost does not exist"}
	// MySQL refuses to re-create a referenced table without the column a
	// key names, even with FOREIGN_KEY_CHECKS=0: only MariaDB can be left
	// with a key to a missing column.
	if st.Binary().Flavor != mariadb.MySQL {
		sql += `CREATE TABLE later (id INT PRIMARY KEY, nope INT, UNIQUE KEY (nope)) ENGINE=InnoDB;
CREATE TABLE wrongcol (id INT PRIMARY KEY, p INT, CONSTRAINT fk_col FOREIGN KEY (p) REFERENCES later (nope)) ENGINE=InnoDB;
DROP TABLE later;
CREATE TABLE later (id INT PRIMARY KEY) ENGINE=InnoDB;
`
		wants = append(wants, "app.wrongcol.fk_col (p) references app.later(nope), but column app.later.nope does not exist")
	}
	m := templatetest.Build(t, st, "app", sql, template.BuildOptions{Workers: 1})
	all := strings.Join(m.Warnings, "\n")
	for _, want := range wants {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "fk_good") || len(m.Warnings) != len(wants) {
		t.Errorf("warnings = %q, want the %d dangling keys only", m.Warnings, len(wants))
	}
	if !strings.Contains(strings.Join(lines, "\n"), "warning: %s") {
		t.Errorf("the dangling keys were not reported as the build ran: %q", lines)
	}
}

// TestServerOptions: a template's server runs the character set and
// collation of the stock server of its version by default, and a server
// option changes that and the content hash.
func TestServerOptions(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	out := filepath.Join(t.TempDir(), "charset")
	init := mariadbtest.Client("mariadb") + ` -N -u"$MYSQL_USER" -e "SELECT @@character_set_server, @@collation_server" > ` + out
	build := func(opts []string) *catalog.Meta {
		t.Helper()
		p := mariadb.DefaultProfile()
		var err error
		if p.Options, err = mariadb.MergeOptions(p.Options, opts); err != nil {
			t.Fatal(err)
		}
		m, _, err := st.Build(context.Background(), template.BuildOptions{Name: "cs", InitCmd: init, Profile: p})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := build(nil)
	if b, want := readCharset(out), mariadbtest.StockCharset(st.Binary()); b != want {
		t.Errorf("default template server charset = %q, want the stock server's %q", b, want)
	}
	b := build([]string{"character_set_server=latin1", "collation-server=latin1_swedish_ci"})
	if got, _ := os.ReadFile(out); strings.TrimSpace(string(got)) != "latin1\tlatin1_swedish_ci" {
		t.Errorf("with --server-option latin1: %q", got)
	}
	if a.Hash == b.Hash {
		t.Error("a server option did not change the content hash")
	}
	if strings.Join(b.ServerOptions, " ") != "character-set-server=latin1 collation-server=latin1_swedish_ci" {
		t.Errorf("the template records server options %q", b.ServerOptions)
	}
	if _, err := mariadb.MergeOptions(nil, []string{"datadir=/etc"}); err == nil {
		t.Error("a server option pristine sets itself (datadir) was accepted")
	}
}

// readCharset is the "charset<TAB>collation" line an init command wrote
// to path, with a space for the tab.
func readCharset(path string) string {
	b, _ := os.ReadFile(path)
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "\t", " ")
}
