package pool

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/pristinedb/pristine/internal/quote"
)

// InnoDB imports a tablespace with secondary indexes only with the
// table's export metadata beside it (the .cfg file FLUSH TABLES ... FOR
// EXPORT writes: columns, index ids and root pages, AUTO_INCREMENT). A
// fresh slot's tables are the template's, so the metadata one fresh slot
// exports serves every slot of the pool: it is exported once, from the
// first slot that boots on a fresh clone, and kept in the pool's
// directory (metaDir, root's only).

// metaDir holds the pool's export metadata, one db/table.cfg per InnoDB
// table, and metaDone once complete.
const (
	metaDir  = ".export-meta"
	metaDone = "complete"
)

// exportMu makes one slot of a pool export at a time (the others find it
// done).
var exportMu sync.Mutex

// exportMeta exports the metadata of the template's InnoDB tables from a
// freshly booted slot, if the pool has none yet. It is best effort: a
// table without metadata is reset fully when changed.
func (p *Pool) exportMeta(ctx context.Context, admin *sql.DB, s *slot) {
	dir := filepath.Join(p.dir, metaDir)
	exportMu.Lock()
	defer exportMu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, metaDone)); err == nil {
		return
	}
	if err := exportAll(ctx, admin, filepath.Join(s.dir, "data"), dir); err != nil {
		p.log.Warn("in-place reset: the template's InnoDB export metadata could not be read; changed InnoDB tables reset fully", "template", p.Meta.Name, "error", err.Error())
	}
}

// exportAll writes the export metadata of every InnoDB table of data's
// server into dir, then marks dir complete.
func exportAll(ctx context.Context, admin *sql.DB, data, dir string) error {
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
	var tables []tableRef
	for rows.Next() {
		var t tableRef
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
	for _, t := range tables {
		if err := exportOne(ctx, conn, data, dir, t); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, metaDone), nil, 0o600)
}

// exportOne exports one table's metadata: FLUSH TABLES ... FOR EXPORT
// writes it beside the table, it is copied to dir, and UNLOCK TABLES
// removes it from the clone.
func exportOne(ctx context.Context, conn *sql.Conn, data, dir string, t tableRef) error {
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES "+quote.Ident(t.db)+"."+quote.Ident(t.name)+" FOR EXPORT"); err != nil {
		return fmt.Errorf("export %s: %w", t, err)
	}
	err := copyFile(filepath.Join(data, t.db, t.name+".cfg"), filepath.Join(dir, t.db, t.name+".cfg"))
	if _, uerr := conn.ExecContext(ctx, "UNLOCK TABLES"); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", t, err)
	}
	return nil
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
