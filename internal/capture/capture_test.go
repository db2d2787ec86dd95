package capture_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
)

// sourceURL is a mysql:// URL for user on the instance's socket.
func sourceURL(in *mariadb.Instance, user, password string) string {
	u := "mysql://" + user
	if password != "" {
		u += ":" + password
	}
	return u + "@localhost/?socket=" + in.Config.Socket()
}

func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func queryString(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

// openSource opens a capture.Source for the URL.
func openSource(t *testing.T, url string, dbs ...string) *capture.Source {
	t.Helper()
	cfg, err := dsn.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	src, err := capture.Open(context.Background(), cfg, dbs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// checkNothingLeft asserts that a failed build left no build directory,
// no template and no server.
func checkNothingLeft(t *testing.T, st *template.Builder) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(st.Catalog().Root().Data(), "templates"))
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("left behind after a failed capture: templates/%s", e.Name())
		}
	}
	if k := mariadb.KillOrphans(st.Catalog().Root().Path); len(k) > 0 {
		t.Errorf("a server was left running: %v", k)
	}
}

// fixture is a schema with the objects a capture must carry.
var fixture = []string{
	"CREATE DATABASE shop CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
	"USE shop",
	"CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(40) CHARACTER SET latin1, flags BIT(5), note BLOB, email VARCHAR(80) UNIQUE, name_len INT AS (LENGTH(name)) VIRTUAL) ENGINE=InnoDB",
	"CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer_id INT NOT NULL, total DECIMAL(10,2), placed TIMESTAMP NULL, KEY (customer_id), FOREIGN KEY (customer_id) REFERENCES customer (id)) ENGINE=InnoDB",
	"CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, msg TEXT) ENGINE=Aria",
	"CREATE SEQUENCE invoice_no START WITH 1000",
	// Numbers travel as the server's text: extremes, negative zero, NULL.
	"CREATE TABLE measure (id INT PRIMARY KEY, f FLOAT, d DOUBLE, y YEAR, u BIGINT UNSIGNED, s TINYINT, m MEDIUMINT) ENGINE=InnoDB",
	"INSERT INTO measure VALUES (1, 0.1, 0.1, 1901, 18446744073709551615, -128, -8388608), (2, -3.4028234e38, 1.7976931348623157e308, 2155, 0, 127, 8388607), " +
		"(3, 1.17549435e-38, -2.2250738585072014e-308, 0, 1, 0, 0), (4, -0.0, -0.0, NULL, NULL, NULL, NULL), (5, 123456.789, 1e-300, 2024, 9007199254740993, -1, -1)",
	"INSERT INTO customer (id, name, flags, note, email) SELECT seq, CONCAT('Zoë ', seq), seq % 32, IF(seq % 7 = 0, NULL, CONCAT('a\\tb\\nc\\\\d', CHAR(0), seq)), CONCAT('c', seq, '@x') FROM seq_1_to_1500",
	"INSERT INTO customer (id, name, email) VALUES (0, 'zero id', 'zero@x')",
	"INSERT INTO orders (customer_id, total, placed) SELECT 1 + seq % 1500, seq / 7, '2024-03-01 12:00:00' + INTERVAL seq MINUTE FROM seq_1_to_5000",
	"SELECT NEXT VALUE FOR invoice_no",
	"SELECT NEXT VALUE FOR invoice_no",
	"CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100",
	"CREATE VIEW big_order_count AS SELECT COUNT(*) AS n FROM big_orders",
	"CREATE FUNCTION twice(x INT) RETURNS INT DETERMINISTIC RETURN x * 2",
	"CREATE PROCEDURE add_audit(m TEXT) BEGIN INSERT INTO audit (msg) VALUES (m); END",
	"CREATE TRIGGER orders_ai AFTER INSERT ON orders FOR EACH ROW INSERT INTO audit (msg) VALUES (CONCAT('order ', NEW.id))",
	"SET SESSION sql_mode='ANSI_QUOTES'",
	`CREATE TRIGGER orders_bi BEFORE INSERT ON orders FOR EACH ROW SET NEW.total = COALESCE(NEW.total, 0)`,
	"SET SESSION sql_mode=DEFAULT",
	"CREATE EVENT nightly ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00' DISABLE DO DELETE FROM audit",
	"CREATE USER 'app'@'%' IDENTIFIED BY 'app-pass'",
	"GRANT SELECT, INSERT ON shop.* TO 'app'@'%'",
	"GRANT EXECUTE ON PROCEDURE shop.add_audit TO 'app'@'%'",
	"CREATE DATABASE other",
	"CREATE TABLE other.t (id INT PRIMARY KEY)",
}

// fingerprint describes the shop schema: checksums of the tables, the
// objects with their definers and sql_mode, the sequence and the account.
func fingerprint(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, tb := range []string{"customer", "orders", "audit", "measure"} {
		var name string
		var sum sql.NullInt64
		if err := db.QueryRow("CHECKSUM TABLE shop."+tb).Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d\n", tb, sum.Int64)
	}
	for _, q := range []string{
		"SELECT GROUP_CONCAT(TABLE_NAME, ' ', DEFINER, ' ', VIEW_DEFINITION ORDER BY TABLE_NAME) FROM information_schema.VIEWS WHERE TABLE_SCHEMA='shop'",
		"SELECT GROUP_CONCAT(TRIGGER_NAME, ' ', ACTION_ORDER, ' ', SQL_MODE, ' ', DEFINER ORDER BY TRIGGER_NAME) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA='shop'",
		"SELECT GROUP_CONCAT(ROUTINE_NAME, ' ', ROUTINE_TYPE, ' ', DEFINER, ' ', ROUTINE_DEFINITION ORDER BY ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA='shop'",
		"SELECT GROUP_CONCAT(EVENT_NAME, ' ', STATUS, ' ', EVENT_DEFINITION) FROM information_schema.EVENTS WHERE EVENT_SCHEMA='shop'",
		"SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='shop'",
		"SELECT n FROM shop.big_order_count",
		"SELECT shop.twice(21)",
		"SELECT GROUP_CONCAT(PRIVILEGE_TYPE ORDER BY PRIVILEGE_TYPE) FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE=\"'app'@'%'\"",
		"SELECT COUNT(*) FROM mysql.procs_priv WHERE User='app'",
		"SELECT COUNT(*) FROM shop.customer WHERE id=0",
	} {
		var s sql.NullString
		if err := db.QueryRow(q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		fmt.Fprintf(&b, "%s\n", s.String)
	}
	return b.String()
}

func TestLogicalCopiesSchemaObjectsAndAccounts(t *testing.T) {
	mariadbtest.SkipOnMySQL(t, "the fixture is MariaDB's dialect (Aria, SEQUENCE, seq_1_to_N); MySQL's logical and clone captures are checked by TestFidelityCorpus/mysql-features in internal/verify")
	srcIn := mariadbtest.Start(t)
	execAll(t, mariadbtest.Open(t, srcIn, ""), fixture...)
	want := fingerprint(t, mariadbtest.Open(t, srcIn, ""))
	for _, insert := range []bool{false, true} {
		t.Run(fmt.Sprintf("insert=%v", insert), func(t *testing.T) {
			dst := mariadbtest.Start(t)
			src := openSource(t, sourceURL(srcIn, "root", ""), "shop")
			// One run carries the password hashes, the other does not.
			withPasswords := insert
			st, err := capture.Logical(context.Background(), src, dst.DSN(""), capture.Options{Workers: 3, ChunkRows: 400, Insert: insert, WithPasswords: withPasswords})
			if err != nil {
				t.Fatal(err)
			}
			if st.Chunks < 10 || st.Lock != "ftwrl" || st.Objects != 7 || st.Accounts != 1 {
				t.Errorf("stats %+v: want >= 10 chunks (split by key), ftwrl, 7 objects, 1 account", st)
			}
			got := fingerprint(t, mariadbtest.Open(t, dst, ""))
			if got != want {
				t.Errorf("the copy differs from the source:\n--- source\n%s--- copy\n%s", want, got)
			}
			hashQ := "SELECT authentication_string FROM mysql.user WHERE User='app'"
			srcHash, dstHash := queryString(t, mariadbtest.Open(t, srcIn, ""), hashQ), queryString(t, mariadbtest.Open(t, dst, ""), hashQ)
			if withPasswords && dstHash != srcHash {
				t.Errorf("with passwords: the copy's hash for app is %q, want the source's %q", dstHash, srcHash)
			}
			if !withPasswords && (dstHash == srcHash || len(dstHash) != 41) {
				t.Errorf("without passwords: the copy's hash for app is %q, want a random one, not the source's %q", dstHash, srcHash)
			}
			// A sequence restarts at its next uncached value, as on a
			// restarted source.
			if v := queryString(t, mariadbtest.Open(t, dst, ""), "SELECT NEXT VALUE FOR shop.invoice_no"); v != "2000" {
				t.Errorf("sequence: next value %s, want 2000 (the source's next_not_cached_value)", v)
			}
			if n := queryString(t, mariadbtest.Open(t, dst, ""), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='other'"); n != "0" {
				t.Errorf("database other was copied though only shop was asked for")
			}
		})
	}
}
