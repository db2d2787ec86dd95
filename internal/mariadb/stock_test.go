package mariadb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// resultVariables are the server variables that change what a query
// returns or accepts: a slot must have the stock server's value of each,
// globally and in a new session. A variable the server does not have is
// skipped on both sides.
var resultVariables = []string{
	"character_set_server", "collation_server", "character_set_database", "collation_database",
	"character_set_client", "character_set_connection", "character_set_results", "collation_connection",
	"character_set_filesystem", "character_set_collations", "default_collation_for_utf8mb4",
	"sql_mode", "time_zone", "system_time_zone", "explicit_defaults_for_timestamp",
	"lower_case_table_names", "default_storage_engine", "default_tmp_storage_engine",
	"transaction_isolation", "tx_isolation", "autocommit", "completion_type",
	"div_precision_increment", "group_concat_max_len", "max_allowed_packet", "lc_time_names",
	"default_week_format", "auto_increment_increment", "auto_increment_offset", "max_sort_length",
	"innodb_strict_mode", "innodb_default_row_format", "innodb_autoinc_lock_mode", "innodb_page_size",
	"innodb_file_per_table", "innodb_ft_min_token_size", "ft_min_word_len", "event_scheduler",
	"old_mode", "old", "optimizer_switch", "sql_require_primary_key", "block_encryption_mode",
	"updatable_views_with_limit", "big_tables", "sql_safe_updates", "sql_auto_is_null",
	"default_password_lifetime", "log_bin_trust_function_creators",
}

// collationQueries run in a new database on both servers; their results
// (or error numbers) must be the same. They differ between collations:
// accents, case, trailing spaces (PAD SPACE against NO PAD), expansions
// (ß against ss), the table a CREATE TABLE without a collation makes, the
// defaults of a TIMESTAMP column, and what the sql_mode accepts.
var collationQueries = []string{
	"CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20))",
	"SHOW CREATE TABLE t",
	"INSERT INTO t VALUES (1,'a'),(2,'A'),(3,'á'),(4,'a '),(5,'b'),(6,'ä'),(7,'ß'),(8,'ss'),(9,'Å'),(10,'z'),(11,'æ'),(12,'ae')",
	"SELECT id FROM t ORDER BY s, id",
	"SELECT COUNT(*) FROM t WHERE s = 'a'",
	"SELECT COUNT(*) FROM t WHERE s = 'ss'",
	"SELECT COUNT(*) FROM t WHERE s = 'ae'",
	"SELECT COUNT(DISTINCT s) FROM t",
	"SELECT GROUP_CONCAT(id ORDER BY id) FROM t GROUP BY s ORDER BY MIN(id)",
	"SELECT s = 'A', s = 'á', s = 'a ' FROM t WHERE id = 1",
	"SELECT COUNT(*) FROM t WHERE s LIKE 'a%'",
	"CREATE TABLE u (s VARCHAR(20) UNIQUE)",
	"INSERT INTO u VALUES ('a'),('a ')",
	"SHOW CREATE DATABASE stockdb",
	"CREATE TABLE ts (id INT PRIMARY KEY, a TIMESTAMP, b TIMESTAMP)",
	"SHOW CREATE TABLE ts",
	"CREATE TABLE n (id INT PRIMARY KEY, i INT, d DATE)",
	"INSERT INTO n VALUES (1, 'x', NULL)",
	"INSERT INTO n VALUES (2, 1, '0000-00-00')",
	"SELECT id, i FROM n GROUP BY i ORDER BY i",
	"SELECT 1/3, CONCAT(1/7), DATE_FORMAT('2024-03-05', '%W %M'), WEEK('2024-01-07')",
}

// TestSlotIsStockServer: a server pristine starts (a slot, a template
// build) is the stock server of its version as a user would run it from
// the distribution's package: the same values of every variable that
// changes results, globally and in a new session, and the same results
// of queries that differ between collations, sql_modes and TIMESTAMP
// defaults. The stock server starts with the package's own option file
// where it ships one (Debian's MariaDB: /etc/mysql/my.cnf and the
// mariadb.conf.d it includes), else with the compiled defaults, on a
// private data directory, socket and port.
func TestSlotIsStockServer(t *testing.T) {
	st := mariadbtest.StartStock(t)
	stock := st.DB
	slot := mariadbtest.Open(t, mariadbtest.Start(t), "")
	t.Logf("%s %s, stock server's option file: %q", st.Binary.Flavor, st.Binary.Version, st.OptionFile)
	for _, scope := range []string{"GLOBAL", "SESSION"} {
		want, got := variables(t, stock, scope), variables(t, slot, scope)
		for _, v := range resultVariables {
			if want[v] != got[v] {
				t.Errorf("%s %s: slot %q, stock server %q", scope, v, got[v], want[v])
			}
		}
	}
	want, got := runQueries(t, stock), runQueries(t, slot)
	for i, q := range collationQueries {
		if want[i] != got[i] {
			t.Errorf("%s\n  slot:  %s\n  stock: %s", q, got[i], want[i])
		}
	}
}

// variables are the server's variables of scope (GLOBAL or SESSION) in a
// new session, by name.
func variables(t *testing.T, db *sql.DB, scope string) map[string]string {
	t.Helper()
	rows, err := db.Query("SHOW " + scope + " VARIABLES")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k string
		var v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v.String
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runQueries runs collationQueries on one connection in a new database
// and returns each one's rows (or its error number) as text.
func runQueries(t *testing.T, db *sql.DB) []string {
	t.Helper()
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{"CREATE DATABASE stockdb", "USE stockdb"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	out := make([]string, len(collationQueries))
	for i, q := range collationQueries {
		out[i] = queryText(ctx, c, q)
	}
	return out
}

// queryText is q's rows, tab-separated, one line each, or its error
// number and warnings.
func queryText(ctx context.Context, c *sql.Conn, q string) string {
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return fmt.Sprintf("error %d", me.Number)
		}
		return "error " + err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var lines []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "scan: " + err.Error()
		}
		f := make([]string, len(vals))
		for i, v := range vals {
			f[i] = v.String
			if !v.Valid {
				f[i] = "NULL"
			}
		}
		lines = append(lines, strings.Join(f, "\t"))
	}
	if err := rows.Err(); err != nil {
		return "rows: " + err.Error()
	}
	var warns []string
	if wr, err := c.QueryContext(ctx, "SHOW WARNINGS"); err == nil {
		for wr.Next() {
			var level, msg string
			var code int
			if wr.Scan(&level, &code, &msg) == nil {
				warns = append(warns, fmt.Sprintf("%s %d", level, code))
			}
		}
		wr.Close()
	}
	return strings.Join(lines, " | ") + " warnings: " + strings.Join(warns, ",")
}
