package template

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/pristinedb/pristine/internal/quote"
)

// ErrNotCopyable is returned (wrapped) when --dbs-per-slot cannot copy a
// schema faithfully; the message names the objects.
var ErrNotCopyable = fmt.Errorf("schema cannot be copied inside one server")

var plainName = regexp.MustCompile(`^[A-Za-z0-9_]{1,56}$`)

// copySchema makes k-1 copies of schema db inside the running template
// server (db_2 ... db_k) with transportable tablespaces: CREATE TABLE from
// SHOW CREATE TABLE (foreign keys kept), DISCARD, copy the exported .ibd and
// .cfg files, IMPORT. Objects that name their schema (views, triggers,
// routines, events) or that IMPORT cannot carry (non-InnoDB and partitioned
// tables, sequences) or that name it (grants) make it refuse, naming them.
func copySchema(ctx context.Context, db *sql.DB, datadir, name string, k int) ([]string, error) {
	if !plainName.MatchString(name) {
		return nil, fmt.Errorf("%w: --dbs-per-slot needs a database name of letters, digits and '_' (got %q): pass --database", ErrNotCopyable, name)
	}
	if bad, err := uncopyable(ctx, db, name); err != nil {
		return nil, err
	} else if len(bad) > 0 {
		return nil, fmt.Errorf("%w: --dbs-per-slot cannot copy %s; build without --dbs-per-slot (one database per slot copies everything)", ErrNotCopyable, strings.Join(bad, ", "))
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	charset, collation, comment, err := schemaDefaults(ctx, conn, name)
	if err != nil {
		return nil, fmt.Errorf("read schema %s: %w", name, err)
	}
	// A database comment is MariaDB's (MySQL has neither the column nor
	// the clause).
	commentClause := ""
	if comment != "" {
		commentClause = " COMMENT " + quote.String(comment)
	}
	tables, creates, err := ShowCreateTables(ctx, conn, name)
	if err != nil {
		return nil, err
	}
	names := []string{name}
	exec := func(q string) error {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("copy schema %s: %s: %w", name, abbrev(q), err)
		}
		return nil
	}
	if err := exec("SET SESSION foreign_key_checks=0"); err != nil {
		return nil, err
	}
	for i := 2; i <= k; i++ {
		dst := name + "_" + strconv.Itoa(i)
		names = append(names, dst)
		if err := exec(fmt.Sprintf("CREATE DATABASE %s CHARACTER SET %s COLLATE %s%s", quote.Ident(dst), charset, collation, commentClause)); err != nil {
			return nil, err
		}
		if err := exec("USE " + quote.Ident(dst)); err != nil {
			return nil, err
		}
		for j, t := range tables {
			if err := exec(creates[j]); err != nil {
				return nil, err
			}
			if err := exec("ALTER TABLE " + quote.Ident(t) + " DISCARD TABLESPACE"); err != nil {
				return nil, err
			}
		}
	}
	if len(tables) > 0 {
		if err := exportCopy(ctx, db, datadir, name, tables, names[1:]); err != nil {
			return nil, err
		}
		for _, dst := range names[1:] {
			for _, t := range tables {
				if err := exec("ALTER TABLE " + quote.Ident(dst) + "." + quote.Ident(t) + " IMPORT TABLESPACE"); err != nil {
					return nil, err
				}
			}
		}
	}
	return names, nil
}

// schemaDefaults reads a schema's character set, collation and comment
// (empty on MySQL, whose SCHEMATA has no SCHEMA_COMMENT) by column name.
func schemaDefaults(ctx context.Context, conn *sql.Conn, name string) (charset, collation, comment string, err error) {
	rows, err := conn.QueryContext(ctx, "SELECT * FROM information_schema.SCHEMATA WHERE SCHEMA_NAME=?", name)
	if err != nil {
		return "", "", "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", "", "", err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", "", "", err
		}
		return "", "", "", fmt.Errorf("no schema %s", name)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", "", "", err
	}
	for i, c := range cols {
		switch strings.ToUpper(c) {
		case "DEFAULT_CHARACTER_SET_NAME":
			charset = vals[i].String
		case "DEFAULT_COLLATION_NAME":
			collation = vals[i].String
		case "SCHEMA_COMMENT":
			comment = vals[i].String
		}
	}
	return charset, collation, comment, rows.Err()
}

// exportCopy holds FLUSH TABLES ... FOR EXPORT on the source tables while
// their .ibd and .cfg files are copied into every destination schema.
func exportCopy(ctx context.Context, db *sql.DB, datadir, src string, tables, dsts []string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	q := make([]string, len(tables))
	for i, t := range tables {
		q[i] = quote.Ident(src) + "." + quote.Ident(t)
	}
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES "+strings.Join(q, ", ")+" FOR EXPORT"); err != nil {
		return fmt.Errorf("export %s: %w", src, err)
	}
	defer conn.ExecContext(context.Background(), "UNLOCK TABLES")
	files, err := os.ReadDir(filepath.Join(datadir, src))
	if err != nil {
		return err
	}
	for _, f := range files {
		if ext := filepath.Ext(f.Name()); ext != ".ibd" && ext != ".cfg" {
			continue
		}
		for _, dst := range dsts {
			if err := copyFile(filepath.Join(datadir, src, f.Name()), filepath.Join(datadir, dst, f.Name())); err != nil {
				return fmt.Errorf("copy tablespace %s to %s: %w", f.Name(), dst, err)
			}
		}
	}
	return nil
}

// copyFile copies a tablespace into a schema's directory, the copy owned
// as that directory is: by the server, which runs as another account than
// pristine when pristine is root (the source may be a template's file the
// server writes through its group, svcuser.DataGID).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(dst), &st); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o660)
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if err := out.Chown(int(st.Uid), int(st.Gid)); err != nil {
			out.Close()
			return err
		}
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Queryer is what ShowCreateTables needs: a *sql.DB or a *sql.Conn.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ShowCreateTables lists the base tables of schema, in name order, with the
// CREATE TABLE statement the server gives for each.
func ShowCreateTables(ctx context.Context, q Queryer, schema string) (tables, creates []string, err error) {
	rows, err := q.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA=? AND TABLE_TYPE='BASE TABLE' ORDER BY TABLE_NAME", schema)
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return nil, nil, err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	creates = make([]string, len(tables))
	for i, t := range tables {
		var name string
		if err := q.QueryRowContext(ctx, "SHOW CREATE TABLE "+quote.Ident(schema)+"."+quote.Ident(t)).Scan(&name, &creates[i]); err != nil {
			return nil, nil, fmt.Errorf("show create table %s.%s: %w", schema, t, err)
		}
	}
	return tables, creates, nil
}

// uncopyable lists the objects of a schema that in-server copies cannot
// carry faithfully.
func uncopyable(ctx context.Context, db *sql.DB, schema string) ([]string, error) {
	queries := []struct{ kind, q string }{
		{"view", "SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA=?"},
		{"trigger", "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA=?"},
		{"routine", "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA=?"},
		{"event", "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA=?"},
		{"sequence", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA=? AND TABLE_TYPE='SEQUENCE'"},
		{"non-InnoDB table", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA=? AND TABLE_TYPE='BASE TABLE' AND ENGINE<>'InnoDB'"},
		{"partitioned table", "SELECT DISTINCT TABLE_NAME FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA=? AND PARTITION_NAME IS NOT NULL"},
	}
	var bad []string
	for _, x := range queries {
		rows, err := db.QueryContext(ctx, x.q, schema)
		if err != nil {
			return nil, fmt.Errorf("inspect schema %s: %w", schema, err)
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return nil, err
			}
			bad = append(bad, x.kind+" "+quote.Ident(schema)+"."+quote.Ident(n))
		}
		rows.Close()
	}
	grants, err := grantsOn(ctx, db, schema)
	return append(bad, grants...), err
}

// grantsOn lists the grants that name schema: each copy would still name
// the original.
func grantsOn(ctx context.Context, db *sql.DB, schema string) ([]string, error) {
	var out []string
	for _, q := range []string{
		"SELECT '', User, Host FROM mysql.db WHERE Db=?",
		"SELECT Table_name, User, Host FROM mysql.tables_priv WHERE Db=?",
		"SELECT Routine_name, User, Host FROM mysql.procs_priv WHERE Db=?",
	} {
		rows, err := db.QueryContext(ctx, q, schema)
		if err != nil {
			return nil, fmt.Errorf("inspect grants on %s: %w", schema, err)
		}
		for rows.Next() {
			var obj, user, host string
			if err := rows.Scan(&obj, &user, &host); err != nil {
				rows.Close()
				return nil, err
			}
			on := quote.Ident(schema) + ".*"
			if obj != "" {
				on = quote.Ident(schema) + "." + quote.Ident(obj)
			}
			to := quote.String(user)
			if host != "" {
				to += "@" + quote.String(host)
			}
			out = append(out, "grant on "+on+" to "+to)
		}
		rows.Close()
	}
	return out, nil
}

func abbrev(q string) string {
	if len(q) > 80 {
		return q[:77] + "..."
	}
	return q
}
