package demo_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/sqlload"
)

func TestTables(t *testing.T) {
	tests := []struct {
		opt        demo.Options
		wantTables int
		wantRows   int
	}{
		{demo.Options{}, 51, 4*50000 + 6*20000 + 12*4000 + 29*1500},
		{demo.Options{Scale: 10}, 51, 10 * (4*50000 + 6*20000 + 12*4000 + 29*1500)},
		{demo.Options{Tables: 5}, 5, 5 * 1500},
		{demo.Options{Tables: 30000}, 30000, -1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.opt), func(t *testing.T) {
			tables := demo.Tables(tt.opt)
			if len(tables) != tt.wantTables {
				t.Fatalf("%d tables, want %d", len(tables), tt.wantTables)
			}
			seen := map[string]bool{}
			rows := 0
			for _, tb := range tables {
				if seen[tb.Name] {
					t.Fatalf("table %s twice", tb.Name)
				}
				for _, p := range tb.Parents {
					if !seen[p] {
						t.Fatalf("%s references %s, which is not created before it", tb.Name, p)
					}
				}
				seen[tb.Name] = true
				rows += tb.Rows
			}
			if tt.wantRows >= 0 && rows != tt.wantRows {
				t.Errorf("%d rows, want %d", rows, tt.wantRows)
			}
			if tt.opt.Tables > demo.DefaultTables && rows > 2*(4*50000+6*20000+12*4000+29*1500) {
				t.Errorf("%d rows over %d tables: many tables must stay small", rows, len(tables))
			}
		})
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := demo.Write(&a, demo.Options{}); err != nil {
		t.Fatal(err)
	}
	demo.Write(&b, demo.Options{})
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs wrote different SQL")
	}
	if strings.Contains(a.String(), "DATABASE") || strings.Contains(a.String(), "USE ") {
		t.Fatal("the SQL names a database; it must run in the current one")
	}
	if a.Len() > 200<<10 {
		t.Errorf("the SQL is %d bytes; rows must come from the sequence engine, not literals", a.Len())
	}
}

func TestWriteRejectsBadOptions(t *testing.T) {
	for _, o := range []demo.Options{{Scale: -1}, {Tables: -3}} {
		if err := demo.Write(&bytes.Buffer{}, o); err == nil {
			t.Errorf("Write(%+v) succeeded, want an error", o)
		}
	}
}

// load writes the demo schema with opt into a new database d on a fresh
// server and returns a connection to it.
func load(t *testing.T, opt demo.Options) *sql.DB {
	t.Helper()
	in := mariadbtest.Start(t)
	var buf bytes.Buffer
	if err := demo.Write(&buf, opt); err != nil {
		t.Fatal(err)
	}
	st, err := sqlload.Load(context.Background(), in.DSN(""), []sqlload.Source{sqlload.StringSource("demo.sql", buf.String())}, sqlload.Options{Database: "d"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d tables (%+v) in %v", st.Tables, opt, st.Duration)
	return mariadbtest.Open(t, in, "d")
}

func TestLoad(t *testing.T) {
	for _, opt := range []demo.Options{{Scale: 0.05}, {Scale: 0.5, Tables: 130}} {
		t.Run(fmt.Sprintf("%+v", opt), func(t *testing.T) {
			db := load(t, opt)
			checkSchema(t, db, demo.Tables(opt))
		})
	}
}

// checkSchema compares the loaded database with the tables Write meant to
// create: rows, 1 to 4 secondary indexes each, and foreign keys that exist
// and hold.
func checkSchema(t *testing.T, db *sql.DB, tables []demo.Table) {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND ENGINE = 'InnoDB'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(tables) {
		t.Errorf("%d InnoDB tables, want %d", n, len(tables))
	}
	idx := map[string]int{}
	rows, err := db.Query("SELECT TABLE_NAME, COUNT(DISTINCT INDEX_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'd' AND INDEX_NAME <> 'PRIMARY' GROUP BY TABLE_NAME")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var c int
		rows.Scan(&name, &c)
		idx[name] = c
	}
	rows.Close()
	fks := map[string][]string{} // table -> "column>parent"
	rows, err = db.Query("SELECT TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'd' AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY TABLE_NAME, COLUMN_NAME")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, col, parent string
		rows.Scan(&tbl, &col, &parent)
		fks[tbl] = append(fks[tbl], col+">"+parent)
	}
	rows.Close()

	for _, tb := range tables {
		if c := idx[tb.Name]; c < 1 || c > 4 {
			t.Errorf("%s has %d secondary indexes, want 1 to 4", tb.Name, c)
		}
		var count int
		if err := db.QueryRow("SELECT COUNT(*) FROM `" + tb.Name + "`").Scan(&count); err != nil {
			t.Fatal(err)
		}
		if count != tb.Rows {
			t.Errorf("%s has %d rows, want %d", tb.Name, count, tb.Rows)
		}
		if len(fks[tb.Name]) != len(tb.Parents) {
			t.Errorf("%s has foreign keys %v, want one to each of %v", tb.Name, fks[tb.Name], tb.Parents)
		}
		for _, fk := range fks[tb.Name] {
			col, parent, _ := strings.Cut(fk, ">")
			var orphans int
			q := fmt.Sprintf("SELECT COUNT(*) FROM `%s` c LEFT JOIN `%s` p ON p.id = c.`%s` WHERE c.`%s` IS NOT NULL AND p.id IS NULL", tb.Name, parent, col, col)
			if err := db.QueryRow(q).Scan(&orphans); err != nil {
				t.Fatal(err)
			}
			if orphans != 0 {
				t.Errorf("%s.%s: %d rows reference no row of %s", tb.Name, col, orphans, parent)
			}
		}
	}
}

// TestFullScaleSize loads the demo at scale 1 and checks that
// information_schema puts it at about 110 MB.
func TestFullScaleSize(t *testing.T) {
	if testing.Short() {
		t.Skip("loads about 110 MB; skipped with -short")
	}
	db := load(t, demo.Options{})
	for _, tb := range demo.Tables(demo.Options{}) {
		if _, err := db.Exec("ANALYZE TABLE `" + tb.Name + "`"); err != nil {
			t.Fatal(err)
		}
	}
	var data, index int64
	if err := db.QueryRow("SELECT SUM(DATA_LENGTH), SUM(INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd'").Scan(&data, &index); err != nil {
		t.Fatal(err)
	}
	const mb = 1 << 20
	t.Logf("data %.1f MB + index %.1f MB = %.1f MB", float64(data)/mb, float64(index)/mb, float64(data+index)/mb)
	if total := data + index; total < 80*mb || total > 160*mb {
		t.Errorf("data+index is %.1f MB, want 80 to 160 MB", float64(total)/mb)
	}
}
