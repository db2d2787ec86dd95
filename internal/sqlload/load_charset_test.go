package sqlload

import (
	"context"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// A dump that creates the default database with its own options keeps
// them, and tables made after ALTER DATABASE get the new character set on
// every worker.
func TestDatabaseOptionsSurvive(t *testing.T) {
	in := mariadbtest.Start(t)
	src := StringSource("dump.sql", "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `app` /*!40100 DEFAULT CHARACTER SET latin1 COLLATE latin1_swedish_ci */ COMMENT 'from the dump';\n"+
		"USE `app`;\nCREATE TABLE a (id INT PRIMARY KEY, s VARCHAR(10));\nINSERT INTO a VALUES (1, 'x');\n"+
		"ALTER DATABASE app CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;\n"+
		"CREATE TABLE b (id INT PRIMARY KEY, s VARCHAR(10));\nCREATE TABLE c (id INT PRIMARY KEY, s VARCHAR(10));\nCREATE TABLE d (id INT PRIMARY KEY, s VARCHAR(10));\n")
	if _, err := Load(context.Background(), in.DSN(""), []Source{src}, Options{Database: "app", Workers: 3}); err != nil {
		t.Fatal(err)
	}
	db := mariadbtest.Open(t, in, "")
	var cs, comment string
	if err := db.QueryRow("SELECT DEFAULT_CHARACTER_SET_NAME, SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='app'").Scan(&cs, &comment); err != nil {
		t.Fatal(err)
	}
	if cs != "utf8mb4" || comment != "from the dump" {
		t.Fatalf("database options: charset %s comment %q", cs, comment)
	}
	rows, err := db.Query("SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA='app' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := map[string]string{"a": "latin1_swedish_ci", "b": "utf8mb4_bin", "c": "utf8mb4_bin", "d": "utf8mb4_bin"}
	for rows.Next() {
		var name, coll string
		rows.Scan(&name, &coll)
		if want[name] != coll {
			t.Errorf("table %s collation %s, want %s", name, coll, want[name])
		}
	}
}
