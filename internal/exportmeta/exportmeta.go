// Package exportmeta writes the export metadata of a server's InnoDB
// tables: the .cfg file FLUSH TABLES ... FOR EXPORT leaves beside each
// table (its columns, index ids and root pages, AUTO_INCREMENT), which
// IMPORT TABLESPACE needs to import a table with its secondary indexes.
// The pool's in-place reset imports a changed table's pristine tablespace
// with it (internal/pool, inplace.go). A template build exports it from
// its own server, whose tables are open already, into the template's
// directory (Dir); a pool of a template without it exports it from its
// first slot.
package exportmeta

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pristinedb/pristine/internal/quote"
)

// Dir is the directory beside a template's data directory that holds the
// template's export metadata, one db/table.cfg per InnoDB table (root's
// only, mode 0700), and Done once complete.
const Dir = "export-meta"

// Done marks a complete export directory.
const Done = "complete"

// Batch is how many tables one FLUSH TABLES ... FOR EXPORT names. One
// statement per table cost a pool's first slot a round trip and a flush
// each; a batch stays well under the slots' table_open_cache (400), which
// the locked tables hold open.
const Batch = 100

// Complete reports whether dir holds a complete export.
func Complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, Done))
	return err == nil
}

type table struct{ db, name string }

func (t table) String() string { return "`" + t.db + "`.`" + t.name + "`" }

var plainName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// Export writes the export metadata of every InnoDB table of the server
// behind admin, whose data directory is data, into dir (made 0700), then
// marks dir complete. Tables whose names are not plain identifiers are
// left out (an in-place reset resets them fully).
func Export(ctx context.Context, admin *sql.DB, data, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	conn, err := admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE ENGINE='InnoDB' AND TABLE_TYPE IN ('BASE TABLE','SYSTEM VERSIONED')
		AND TABLE_SCHEMA NOT IN ('mysql','sys','performance_schema','information_schema')
		AND IFNULL(CREATE_OPTIONS,'') NOT LIKE '%partitioned%'`)
	if err != nil {
		return fmt.Errorf("list InnoDB tables: %w", err)
	}
	var tables []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.db, &t.name); err != nil {
			rows.Close()
			return err
		}
		if plainName.MatchString(t.db) && plainName.MatchString(t.name) {
			tables = append(tables, t)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for len(tables) > 0 {
		n := min(Batch, len(tables))
		if err := exportSome(ctx, conn, data, dir, tables[:n]); err != nil {
			return err
		}
		tables = tables[n:]
	}
	return os.WriteFile(filepath.Join(dir, Done), nil, 0o600)
}

// exportSome exports the metadata of tables: FLUSH TABLES ... FOR EXPORT
// writes it beside each table, it is copied to dir, and UNLOCK TABLES
// removes it from the data directory.
func exportSome(ctx context.Context, conn *sql.Conn, data, dir string, tables []table) error {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = quote.Ident(t.db) + "." + quote.Ident(t.name)
	}
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES "+strings.Join(names, ", ")+" FOR EXPORT"); err != nil {
		return fmt.Errorf("export %s and %d more: %w", tables[0], len(tables)-1, err)
	}
	var err error
	for _, t := range tables {
		if err = copyFile(filepath.Join(data, t.db, t.name+".cfg"), filepath.Join(dir, t.db, t.name+".cfg")); err != nil {
			err = fmt.Errorf("export %s: %w", t, err)
			break
		}
	}
	if _, uerr := conn.ExecContext(ctx, "UNLOCK TABLES"); uerr != nil && err == nil {
		err = uerr
	}
	return err
}

// copyFile copies src to dst (made 0600, its directory 0700).
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
