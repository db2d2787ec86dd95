package verify_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/verify"
)

// TestCompareFindsEachChange loads the objects case twice into one server,
// as `app` and `copy`, checks that verify finds them equal under the map
// app=copy, then changes one thing of each kind in the copy and checks that
// each change, and nothing else, is reported.
func TestCompareFindsEachChange(t *testing.T) {
	mariadbtest.SkipOnMySQL(t, "it loads MariaDB's innodb-tables case (IGNORED indexes, sequences); TestCompareFindsEachChangeMySQL is MySQL's")
	e := newCorpusEnv(t)
	in := mariadbtest.Start(t)
	sqlText, err := os.ReadFile(filepath.Join(corpusDir, "innodb-tables", "create.sql"))
	if err != nil {
		t.Fatal(err)
	}
	extra := `
CREATE VIEW v AS SELECT id, title FROM book;
CREATE TRIGGER tr BEFORE INSERT ON book FOR EACH ROW SET NEW.price = NEW.price;
CREATE FUNCTION f() RETURNS INT DETERMINISTIC RETURN 1;
CREATE EVENT ev ON SCHEDULE EVERY 1 HOUR STARTS '2030-01-01 00:00:00' DISABLE DO SELECT 1;
CREATE SEQUENCE s START WITH 10;
`
	for i, db := range []string{"app", "copy"} {
		load := string(sqlText) + extra
		if i > 0 { // the shared schema exists once
			var keep []string
			for _, l := range strings.Split(load, "\n") {
				if !strings.Contains(l, "shared_ref") || strings.Contains(l, "REFERENCES") {
					keep = append(keep, l)
				}
			}
			load = strings.Join(keep, "\n")
		}
		e.mysql(t, in, "", strings.NewReader("CREATE DATABASE "+db))
		e.mysql(t, in, db, strings.NewReader(load))
	}
	db := mariadbtest.Open(t, in, "")
	ctx := context.Background()
	pairs := []verify.Pair{{Source: "app", Target: "copy"}, {Source: "shared_ref", Target: "shared_ref"}}
	side := func(l string) verify.Side { return verify.Side{DB: db, Label: l} }
	r, err := verify.Compare(ctx, side("app"), side("copy"), verify.Options{Pairs: pairs})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Fatalf("two loads of the same SQL differ:\n%s", text(t, r))
	}
	// The source read once, before the changes, finds the same ones.
	src, err := verify.ReadSource(ctx, side("app"), verify.Options{Pairs: pairs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Compare(ctx, side("copy"), []verify.Pair{{Source: "app", Target: "copy"}}); err == nil {
		t.Error("a comparison with other sources than the ones read was not refused")
	}
	changes := []struct{ sql, want string }{
		{"ALTER TABLE copy.book MODIFY title VARCHAR(201) NOT NULL", "table `app`.`book` column `title` differs"},
		{"ALTER TABLE copy.author ALTER INDEX ix_born NOT IGNORED", "table `app`.`author` index `ix_born` differs"},
		{"ALTER TABLE copy.author DROP INDEX ft_bio", "table `app`.`author` index `ft_bio` missing"},
		{"ALTER TABLE copy.book DROP CONSTRAINT CONSTRAINT_1", "table `app`.`book` check `CONSTRAINT_1` missing"},
		{"ALTER TABLE copy.shop ADD COLUMN extra INT", "table `app`.`shop` column `extra` extra"},
		{"", "table `app`.`shop` column order differs"},
		{"UPDATE copy.`odd name ☃.v1` SET `dot.col` = 'b' WHERE `we``ird col` = 1", "table `app`.`odd name ☃.v1` rows (checksum) differs"},
		{"ALTER TABLE copy.empty_auto AUTO_INCREMENT = 100", "table `app`.`empty_auto` AUTO_INCREMENT differs"},
		{"ALTER DATABASE copy COMMENT 'changed'", "database `app` comment differs"},
		{"CREATE OR REPLACE VIEW copy.v AS SELECT id, title FROM app.book", "view `app`.`v` create view differs"},
		{"DROP TRIGGER copy.tr", "trigger `app`.`tr`  missing"},
		{"CREATE OR REPLACE FUNCTION copy.f() RETURNS INT DETERMINISTIC RETURN 2", "function `app`.`f` create function differs"},
		{"ALTER EVENT copy.ev ENABLE", "event `app`.`ev` create event differs"},
		{"SELECT NEXTVAL(copy.s)", "sequence `app`.`s` state next_not_cached_value differs"},
	}
	var script strings.Builder
	for _, c := range changes {
		if c.sql != "" {
			script.WriteString(c.sql + ";\n")
		}
	}
	e.mysql(t, in, "", strings.NewReader(script.String()))
	r, err = verify.Compare(ctx, side("app"), side("copy"), verify.Options{Pairs: pairs})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, d := range r.Diffs {
		got = append(got, d.Kind+" "+d.Object+" "+d.Part+" "+string(d.Change))
	}
	for _, c := range changes {
		want = append(want, c.want)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\n\nwant:\n%s\n\nreport:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), text(t, r))
	}
	once, err := src.Compare(ctx, side("copy"), pairs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(once.Diffs, r.Diffs) || !reflect.DeepEqual(once.Known, r.Known) {
		t.Errorf("the source read once reports otherwise:\n%s\n\nthan both read now:\n%s", text(t, once), text(t, r))
	}
	// The view in the copy that still reads the original is marked as such.
	for _, d := range r.Diffs {
		if d.Kind == "view" && !strings.Contains(d.Target, "`app`/*the source's schema, not the copy's*/.`book`") {
			t.Errorf("the copy's view reads the original, but the report does not say so: %s", d.Target)
		}
	}
	if !r.Clean() && !strings.Contains(text(t, r), "14 differences") {
		t.Errorf("the text report does not count the differences:\n%s", text(t, r))
	}
}

// TestCompareFindsEachChangeMySQL is TestCompareFindsEachChange on MySQL,
// with its own case (testdata/fidelity-mysql/mysql-features) loaded as
// `app` and `copy` (its accounts once): equal, then one change of each
// MySQL kind in the copy is reported, and nothing else: a row's INVISIBLE
// column and a row through JSON (verify's own row digest on MySQL), a
// functional index and a multi-valued one dropped, an INVISIBLE column made
// visible, a CHECK constraint dropped, an AUTO_INCREMENT counter.
func TestCompareFindsEachChangeMySQL(t *testing.T) {
	e := newCorpusEnv(t)
	if e.st.Binary().Flavor != mariadb.MySQL {
		t.Skip("MySQL's case: the installed server is MariaDB (TestCompareFindsEachChange is its)")
	}
	in := mariadbtest.Start(t)
	sqlText, err := os.ReadFile(filepath.Join(mysqlCorpusDir, "mysql-features", "create.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for i, db := range []string{"app", "copy"} {
		load := string(sqlText)
		if i > 0 { // the accounts exist once
			var keep []string
			for _, l := range strings.Split(load, "\n") {
				if !strings.HasPrefix(l, "CREATE ROLE") && !strings.HasPrefix(l, "CREATE USER") && !strings.HasPrefix(l, "GRANT") && !strings.HasPrefix(l, "SET DEFAULT ROLE") {
					keep = append(keep, l)
				}
			}
			load = strings.Join(keep, "\n")
		}
		e.mysql(t, in, "", strings.NewReader("CREATE DATABASE "+db))
		e.mysql(t, in, db, strings.NewReader(load))
	}
	db := mariadbtest.Open(t, in, "")
	ctx := context.Background()
	pairs := []verify.Pair{{Source: "app", Target: "copy"}}
	side := func(l string) verify.Side { return verify.Side{DB: db, Label: l} }
	r, err := verify.Compare(ctx, side("app"), side("copy"), verify.Options{Pairs: pairs, SkipUsers: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Fatalf("two loads of the same SQL differ:\n%s", text(t, r))
	}
	// Rows first (verify leaves a table's rows out while its columns
	// differ), then the definitions; each round's changes are reported,
	// and nothing else but the rounds before.
	rounds := [][]struct{ sql, want string }{{
		{"UPDATE copy.customer SET secret = 'changed' WHERE id = 1", "table `app`.`customer` rows (checksum) differs"},
		{"UPDATE copy.orders SET note = JSON_UNQUOTE(JSON_EXTRACT('{\"a\": \"x\"}', '$.a')) WHERE id = 2", "table `app`.`orders` rows (checksum) differs"},
	}, {
		{"ALTER TABLE copy.customer DROP INDEX ix_email_lower", "table `app`.`customer` index `ix_email_lower` missing"},
		{"ALTER TABLE copy.customer DROP INDEX ix_pref_ids", "table `app`.`customer` index `ix_pref_ids` missing"},
		{"ALTER TABLE copy.customer ALTER COLUMN secret SET VISIBLE", "table `app`.`customer` column `secret` differs"},
		{"ALTER TABLE copy.orders DROP CHECK ck_total", "table `app`.`orders` check `ck_total` missing"},
		{"ALTER TABLE copy.audit AUTO_INCREMENT = 100", "table `app`.`audit` AUTO_INCREMENT differs"},
	}}
	before := map[string]bool{}
	for _, changes := range rounds {
		var script strings.Builder
		for _, c := range changes {
			script.WriteString(c.sql + ";\n")
		}
		e.mysql(t, in, "", strings.NewReader(script.String()))
		r, err = verify.Compare(ctx, side("app"), side("copy"), verify.Options{Pairs: pairs, SkipUsers: true})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, d := range r.Diffs {
			got[d.Kind+" "+d.Object+" "+d.Part+" "+string(d.Change)] = true
		}
		for _, c := range changes {
			if !got[c.want] {
				t.Errorf("%s: not reported (%s)\n%s", c.sql, c.want, text(t, r))
			}
			before[c.want] = true
		}
		for g := range got {
			if !before[g] {
				t.Errorf("reported beyond the changes: %s\n%s", g, text(t, r))
			}
		}
	}
}

func text(t *testing.T, r *verify.Report) string {
	var b strings.Builder
	if err := verify.WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
