package exportmeta_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pristinedb/pristine/internal/exportmeta"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// ReadFacts counts sequences, names only the foreign keys with a
// cascading action, and reads the AUTO_INCREMENT counters and the tables
// a reset may count where the flavour needs them: InnoDB tables without
// a trigger, a FULLTEXT index or partitions that are empty, or have a
// counter, at most CountedRows rows and no cascade reaching them. The
// facts written are the facts loaded.
func TestReadWriteFacts(t *testing.T) {
	in := mariadbtest.Start(t)
	db := mariadbtest.Open(t, in, "")
	mariadbtest.Exec(t, db, "CREATE DATABASE app",
		"CREATE TABLE app.p (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE app.c1 (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES app.p (id) ON DELETE CASCADE) ENGINE=InnoDB",
		"CREATE TABLE app.c2 (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES app.p (id) ON UPDATE SET NULL) ENGINE=InnoDB",
		"CREATE TABLE app.c3 (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES app.p (id)) ENGINE=InnoDB",
		"INSERT INTO app.p VALUES (), (), ()",
		"CREATE TABLE app.c4 (id INT AUTO_INCREMENT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES app.p (id) ON DELETE CASCADE) ENGINE=InnoDB",
		"INSERT INTO app.c4 (p) VALUES (1)",
		"CREATE TABLE app.e_trigger (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TRIGGER app.t_del BEFORE DELETE ON app.e_trigger FOR EACH ROW SET @x = 1",
		"CREATE TABLE app.e_fulltext (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY (body)) ENGINE=InnoDB",
		"CREATE TABLE app.e_parts (id INT PRIMARY KEY) ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 2",
		"CREATE TABLE app.e_myisam (id INT PRIMARY KEY) ENGINE=MyISAM",
		"CREATE TABLE app.`e gone` (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO app.`e gone` VALUES (1)",
		"DELETE FROM app.`e gone`",
		"CREATE TABLE app.no_counter (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO app.no_counter VALUES (1)",
		"CREATE TABLE app.big (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO app.big (v) SELECT 1 FROM information_schema.COLUMNS a, information_schema.COLUMNS b LIMIT %d", exportmeta.CountedRows+1),
		"CREATE TABLE app.small (n INT PRIMARY KEY, k BIGINT AUTO_INCREMENT, KEY (k)) ENGINE=InnoDB",
		"INSERT INTO app.small (n) VALUES (1), (2)")
	counters := in.Binary.Flavor.Changes().ImportKeepsCounter
	sequences := 0
	if in.Binary.Flavor != mariadb.MySQL { // MySQL has no sequences
		mariadbtest.Exec(t, db, "CREATE SEQUENCE app.s")
		sequences = 1
	}
	ft, err := exportmeta.ReadFacts(context.Background(), db, in.Binary.Flavor)
	if err != nil {
		t.Fatal(err)
	}
	p := exportmeta.Table{DB: "app", Name: "p"}
	tbl := func(name string) exportmeta.Table { return exportmeta.Table{DB: "app", Name: name} }
	want := &exportmeta.Facts{Sequences: sequences, Cascades: []exportmeta.Cascade{{Parent: p, Child: tbl("c1")}, {Parent: p, Child: tbl("c2")}, {Parent: p, Child: tbl("c4")}}}
	if counters {
		want.Counters = []exportmeta.Counter{{Table: tbl("c4"), Next: 2}, {Table: p, Next: 4}, {Table: tbl("small"), Next: 3}}
		// big's counter is past its rows, by how much depends on how the
		// server hands out a bulk insert's values.
		if len(ft.Counters) > 0 && ft.Counters[0].Table == tbl("big") && ft.Counters[0].Next > exportmeta.CountedRows+1 {
			ft.Counters = ft.Counters[1:]
		}
	}
	if in.Binary.Flavor.Changes().DeleteAdded {
		// A table whose rows were all deleted is empty, and an empty
		// table may be counted whatever reaches it; a table with rows
		// only with a counter, few rows and no cascade reaching it.
		want.Counted = []exportmeta.Counted{{Table: tbl("c1"), Column: ""}, {Table: tbl("c2")}, {Table: tbl("c3")}, {Table: tbl("e gone")},
			{Table: p, Rows: 3, Column: "id"}, {Table: tbl("small"), Rows: 2, Column: "k"}}
	}
	if !reflect.DeepEqual(ft, want) {
		t.Errorf("facts %+v, want %+v", ft, want)
	}
	dir := filepath.Join(t.TempDir(), exportmeta.Dir)
	if err := exportmeta.WriteFacts(dir, ft); err != nil {
		t.Fatal(err)
	}
	back, err := exportmeta.LoadFacts(dir)
	if err != nil || !reflect.DeepEqual(back, ft) {
		t.Errorf("loaded %+v (%v), want what was written, %+v", back, err, ft)
	}
}

// A template without facts (an older build, an import) loads none, and a
// damaged facts file is an error, not facts.
func TestLoadFactsAbsentOrDamaged(t *testing.T) {
	dir := t.TempDir()
	if ft, err := exportmeta.LoadFacts(dir); ft != nil || err != nil {
		t.Fatalf("LoadFacts of an empty directory: %+v, %v; want nothing", ft, err)
	}
	for _, body := range []string{"{", `{"sequences": 0}`, `{"sequences": -1, "cascades": []}`} {
		if err := os.WriteFile(filepath.Join(dir, exportmeta.FactsFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if ft, err := exportmeta.LoadFacts(dir); ft != nil || err == nil {
			t.Errorf("LoadFacts of %q: %+v, %v; want an error", body, ft, err)
		}
	}
}
