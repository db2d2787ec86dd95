package sqlload_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/sqlload"
)

func queryString(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

func TestLoadSessionStateAndDatabases(t *testing.T) {
	in := mariadbtest.Start(t)
	input := strings.Join([]string{
		"/*!40101 SET NAMES utf8mb4 */;",
		"SET time_zone = '+05:00', @v = 42;",
		"CREATE DATABASE a;",
		"USE a;",
	}, "\n") + "\n"
	// Enough tables that every worker gets some; each records the session
	// state it saw.
	for i := range 12 {
		n := string(rune('a' + i))
		input += "CREATE TABLE t" + n + " (tz VARCHAR(10), v INT, db VARCHAR(10));\n" +
			"INSERT INTO t" + n + " VALUES (@@session.time_zone, @v, DATABASE());\n"
	}
	input += "CREATE DATABASE b;\nUSE b;\nCREATE TABLE t (db VARCHAR(10));\nINSERT INTO t VALUES (DATABASE());\n" +
		"SET @v = 7;\nINSERT INTO a.ta VALUES ('x', @v, DATABASE());\n"

	st, err := sqlload.Load(context.Background(), in.DSN(""), []sqlload.Source{sqlload.StringSource("input.sql", input)}, sqlload.Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if st.Tables != 13 {
		t.Errorf("Stats.Tables = %d, want 13", st.Tables)
	}
	db := mariadbtest.Open(t, in, "")
	for i := range 12 {
		n := "a.t" + string(rune('a'+i))
		got := queryString(t, db, "SELECT CONCAT_WS(',', tz, v, db) FROM "+n+" WHERE tz <> 'x'")
		if got != "+05:00,42,a" {
			t.Errorf("%s saw session state %q, want +05:00,42,a", n, got)
		}
	}
	if got := queryString(t, db, "SELECT db FROM b.t"); got != "b" {
		t.Errorf("b.t saw database %q, want b", got)
	}
	if got := queryString(t, db, "SELECT CONCAT(v, db) FROM a.ta WHERE tz = 'x'"); got != "7b" {
		t.Errorf("a.ta row inserted from database b saw %q, want 7b", got)
	}
}

func TestLoadDefaultDatabase(t *testing.T) {
	in := mariadbtest.Start(t)
	input := "CREATE TABLE t (a INT);\nINSERT INTO t VALUES (1),(2);\n"
	var lastBytes, lastStatements int64
	progress := func(b, s int64) { lastBytes, lastStatements = b, s }
	st, err := sqlload.Load(context.Background(), in.DSN(""), []sqlload.Source{sqlload.StringSource("s.sql", input)},
		sqlload.Options{Database: "fresh", Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if lastBytes != int64(len(input)) || lastStatements != 2 || st.Statements != 2 {
		t.Errorf("last progress (%d bytes, %d statements), stats %+v; want %d bytes and 2 statements", lastBytes, lastStatements, st, len(input))
	}
	db := mariadbtest.Open(t, in, "")
	if got := queryString(t, db, "SELECT SUM(a) FROM fresh.t"); got != "3" {
		t.Fatalf("fresh.t sums to %s, want 3", got)
	}
}

func TestLoadErrorNamesFileAndLine(t *testing.T) {
	in := mariadbtest.Start(t)
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("CREATE TABLE a (x INT);\nINSERT INTO a VALUES (1);\n"))
	zw.Close()
	write("01-a.sql.gz", gz.Bytes())
	enc, _ := zstd.NewWriter(nil)
	write("02-b.sql.zst", enc.EncodeAll([]byte("CREATE TABLE b (x INT);\n\n-- a comment\nINSERT INTO b VALUES\n(1),\n(2);\n"), nil))
	write("03-c.sql", []byte("INSERT INTO a VALUES (2);\n\n\nINSERT INTO missing\n  VALUES (1);\nINSERT INTO a VALUES (3);\n"))
	write("notes.txt", []byte("not SQL"))

	srcs, err := sqlload.Sources(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One worker runs the statements in input order, so what ran before the
	// error is known; with more, the error cancels statements queued before it.
	_, err = sqlload.Load(context.Background(), in.DSN(""), srcs, sqlload.Options{Database: "d", Workers: 1})
	var se *sqlload.StatementError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *StatementError", err)
	}
	wantFile := filepath.Join(dir, "03-c.sql")
	if se.File != wantFile || se.Line != 4 {
		t.Errorf("error at %s:%d, want %s:4", se.File, se.Line, wantFile)
	}
	for _, want := range []string{wantFile + ":4: ", "doesn't exist", "INSERT INTO missing VALUES (1)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	db := mariadbtest.Open(t, in, "d")
	if got := queryString(t, db, "SELECT COUNT(*) FROM b"); got != "2" {
		t.Errorf("b has %s rows, want 2 (the zstd file ran)", got)
	}
	if got := queryString(t, db, "SELECT GROUP_CONCAT(x ORDER BY x) FROM a"); got != "1,2" {
		t.Errorf("a holds %q, want 1,2: nothing after the error may run", got)
	}
}

func TestLoadStatementLargerThanMaxAllowedPacket(t *testing.T) {
	in := mariadbtest.Start(t)
	db := mariadbtest.Open(t, in, "")
	mariadbtest.Exec(t, db, "SET GLOBAL max_allowed_packet = 1048576")
	big := "INSERT INTO t VALUES ('" + strings.Repeat("x", 2<<20) + "');\n"
	_, err := sqlload.Load(context.Background(), in.DSN(""), []sqlload.Source{sqlload.StringSource("big.sql", "CREATE TABLE t (a LONGTEXT);\n"+big)}, sqlload.Options{Database: "d"})
	if err == nil || !strings.Contains(err.Error(), "big.sql:2: ") || !strings.Contains(err.Error(), "max_allowed_packet") {
		t.Fatalf("got %v, want an error at big.sql:2 that names max_allowed_packet", err)
	}
}

// TestLoadDumpRoundTrip dumps a schema with every kind of object that
// mariadb-dump writes, drops it, loads the dump and compares.
func TestLoadDumpRoundTrip(t *testing.T) {
	dump, err := exec.LookPath("mariadb-dump")
	if err != nil {
		t.Skip("mariadb-dump is not installed: it writes the input of this test")
	}
	in := mariadbtest.Start(t)
	db := mariadbtest.Open(t, in, "")
	mariadbtest.Exec(t, db, sampleSchema...)
	sums := fingerprint(t, db)

	out, err := exec.Command(dump, "--socket="+in.Config.Socket(), "--user=root",
		"--routines", "--triggers", "--events", "--databases", "shop", "--net-buffer-length=4096").Output()
	if err != nil {
		t.Fatalf("mariadb-dump: %v", err)
	}
	mariadbtest.Exec(t, db, "DROP DATABASE shop")

	for _, workers := range []int{1, 4} {
		st, err := sqlload.Load(context.Background(), in.DSN(""), []sqlload.Source{sqlload.StringSource("dump.sql", string(out))}, sqlload.Options{Workers: workers})
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		if st.Tables != 5 || st.Bytes != int64(len(out)) {
			t.Errorf("%d workers: stats %+v, want 5 tables and %d bytes", workers, st, len(out))
		}
		if got := fingerprint(t, db); got != sums {
			t.Errorf("%d workers: loaded schema differs:\n got %s\nwant %s", workers, got, sums)
		}
		// The procedure and the trigger it fires work.
		mariadbtest.Exec(t, db, "CALL shop.add_order(9999)")
		if got := queryString(t, db, "SELECT CONCAT(n, (SELECT what FROM shop.audit)) FROM shop.counters"); got != "2001order; 9999" {
			t.Errorf("%d workers: after add_order: %q, want 2001order; 9999", workers, got)
		}
		mariadbtest.Exec(t, db, "DROP DATABASE shop")
	}
}

// sampleSchema has tables with foreign keys, a view, a trigger, a procedure,
// a function and an event, and rows with awkward text.
var sampleSchema = []string{
	"CREATE DATABASE shop",
	"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(50), note TEXT)",
	"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer_id INT, total DECIMAL(10,2), KEY (customer_id), FOREIGN KEY (customer_id) REFERENCES shop.customers (id))",
	"CREATE TABLE shop.items (order_id INT, n INT, sku VARCHAR(20), PRIMARY KEY (order_id, n), FOREIGN KEY (order_id) REFERENCES shop.orders (id))",
	"CREATE TABLE shop.audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(100))",
	"CREATE TABLE shop.counters (name VARCHAR(20) PRIMARY KEY, n INT)",
	"INSERT INTO shop.customers SELECT seq, CONCAT('c', seq), CONCAT('it''s; a \"note\" \\\\ ', seq, '\\n-- not a comment;') FROM shop.seq_1_to_300",
	"INSERT INTO shop.orders SELECT seq, 1 + seq % 300, seq * 1.25 FROM shop.seq_1_to_2000",
	"INSERT INTO shop.items SELECT 1 + seq % 2000, seq, CONCAT('sku-', seq) FROM shop.seq_1_to_5000",
	"INSERT INTO shop.counters VALUES ('orders', 2000)",
	"CREATE VIEW shop.big_orders AS SELECT o.id, c.name FROM shop.orders o JOIN shop.customers c ON c.id = o.customer_id WHERE o.total > 100",
	"CREATE TRIGGER shop.orders_ai AFTER INSERT ON shop.orders FOR EACH ROW BEGIN INSERT INTO shop.audit (what) VALUES (CONCAT('order; ', NEW.id)); UPDATE shop.counters SET n = n + 1 WHERE name = 'orders'; END",
	"CREATE PROCEDURE shop.add_order(i INT) BEGIN INSERT INTO shop.orders VALUES (i, 1, 1); SELECT 'done;'; END",
	"CREATE FUNCTION shop.twice(x INT) RETURNS INT DETERMINISTIC RETURN x * 2",
	"CREATE EVENT shop.nightly ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM shop.audit",
}

// fingerprint sums up the shop schema: table checksums, and the names of
// the other objects.
func fingerprint(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	rows, err := db.Query("CHECKSUM TABLE shop.customers, shop.orders, shop.items, shop.audit, shop.counters")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var sum sql.NullInt64
		if err := rows.Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%d ", name, sum.Int64)
	}
	rows.Close()
	for _, q := range []string{
		"SELECT GROUP_CONCAT(TABLE_NAME) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'shop'",
		"SELECT GROUP_CONCAT(TRIGGER_NAME) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'shop'",
		"SELECT GROUP_CONCAT(ROUTINE_NAME ORDER BY ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'shop'",
		"SELECT GROUP_CONCAT(EVENT_NAME) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = 'shop'",
		"SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'shop'",
		"SELECT COUNT(*) FROM shop.big_orders",
		"SELECT shop.twice(21)",
	} {
		b.WriteString(queryString(t, db, q) + " ")
	}
	return b.String()
}

// A server that page-compresses new tables by default (template build
// --innodb-compression) refuses ROW_FORMAT=COMPRESSED and REDUNDANT tables
// and turns COMPACT ones DYNAMIC: the load keeps the row format a table
// names, uncompressed, names those tables, and compresses the rest (a
// SPATIAL index is fine).
func TestLoadKeepsUncompressibleTablesUncompressed(t *testing.T) {
	mariadbtest.SkipOnMySQL(t, "innodb_compression_default is MariaDB's")
	in := mariadbtest.Start(t)
	db := mariadbtest.Open(t, in, "")
	mariadbtest.Exec(t, db, "SET GLOBAL innodb_compression_default=ON")
	input := "CREATE TABLE plain (id INT PRIMARY KEY, v VARCHAR(20));\n" +
		"INSERT INTO plain VALUES (1, 'a');\n" +
		"CREATE TABLE places (id INT PRIMARY KEY, pt POINT NOT NULL, SPATIAL KEY sp (pt));\n" +
		"INSERT INTO places VALUES (1, POINT(1, 2));\n" +
		"CREATE TABLE old (id INT PRIMARY KEY) ROW_FORMAT=REDUNDANT;\n" +
		"CREATE TABLE small (id INT PRIMARY KEY) KEY_BLOCK_SIZE=8;\n" +
		"CREATE TABLE compact (id INT PRIMARY KEY) ROW_FORMAT = compact;\n"
	st, err := sqlload.Load(context.Background(), in.DSN(""), []sqlload.Source{sqlload.StringSource("input.sql", input)}, sqlload.Options{Database: "app", Workers: 2})
	if err != nil {
		t.Fatalf("load with page compression on by default: %v", err)
	}
	got := strings.Join(st.Uncompressed, "\n")
	if len(st.Uncompressed) != 3 || !strings.Contains(got, "input.sql:5: CREATE TABLE old") ||
		!strings.Contains(got, "input.sql:6: CREATE TABLE small") || !strings.Contains(got, "input.sql:7: CREATE TABLE compact") {
		t.Errorf("Stats.Uncompressed = %q, want the old, small and compact tables with their lines", st.Uncompressed)
	}
	for table, want := range map[string]bool{"plain": true, "places": true, "old": false, "small": false, "compact": false} {
		opts := queryString(t, db, "SELECT CREATE_OPTIONS FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app' AND TABLE_NAME = '"+table+"'")
		if got := strings.Contains(strings.ToUpper(opts), "PAGE_COMPRESSED"); got != want {
			t.Errorf("app.%s: create options %q, page compressed %v, want %v", table, opts, got, want)
		}
	}
	if f := queryString(t, db, "SELECT ROW_FORMAT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app' AND TABLE_NAME = 'compact'"); f != "Compact" {
		t.Errorf("app.compact: row format %s, want Compact", f)
	}
	if n := queryString(t, db, "SELECT COUNT(*) FROM app.places"); n != "1" {
		t.Errorf("app.places holds %s rows, want 1", n)
	}
	if v := queryString(t, db, "SELECT @@global.innodb_compression_default"); v != "1" {
		t.Errorf("innodb_compression_default = %s after the load, want it left on", v)
	}
}
