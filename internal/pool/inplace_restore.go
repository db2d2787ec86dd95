package pool

// How the in-place reset (inplace.go) restores one changed table: InnoDB's
// tablespace re-attached from the slot's seed, Aria's and MyISAM's files
// swapped in while the table is flushed.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/quote"
)

// tablePlan is one changed table and how it is restored.
type tablePlan struct {
	ref    tableRef
	engine string      // InnoDB, Aria or MyISAM
	writes tableWrites // what the counters saw written (changedTables)
}

// planTables says how each changed table is restored, or why one cannot
// be; writes are what was written to each. A changed table that no
// longer exists was a temporary table (a base table cannot go without a
// DROP or RENAME, which the non-row counters see), gone with its
// connection. What it reads of a table is kept in kinds.
func planTables(ctx context.Context, conn querier, kinds *tableKinds, changed []tableRef, writes map[tableRef]tableWrites) ([]tablePlan, error) {
	var out []tablePlan
	for _, t := range changed {
		engine, err := kinds.engine(ctx, conn, t)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, tablePlan{ref: t, engine: engine, writes: writes[t]})
	}
	return out, nil
}

// tableKinds remembers how the in-place reset restores each table of a
// pool's template, or why it cannot: a table's engine, type and
// partitioning change only by DDL, which sends a slot to the full reset
// before its tables are planned, and every slot of a pool is a clone of
// the same template. The zero value is ready to use.
type tableKinds struct {
	mu sync.Mutex
	m  map[tableRef]tableKind
}

// tableKind is what tableKinds keeps of one table.
type tableKind struct {
	engine string // InnoDB, Aria or MyISAM
	err    error  // why it is not restored in place, when it is not
}

// engine is table t's engine among those restored in place, or why it is
// not restored in place; sql.ErrNoRows when no base table or view of that
// name exists (a temporary table: not kept).
func (k *tableKinds) engine(ctx context.Context, conn querier, t tableRef) (string, error) {
	k.mu.Lock()
	got, ok := k.m[t]
	k.mu.Unlock()
	if ok {
		return got.engine, got.err
	}
	var engine, options, kind sql.NullString
	err := conn.QueryRowContext(ctx, "SELECT ENGINE, CREATE_OPTIONS, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", t.db, t.name).Scan(&engine, &options, &kind)
	if errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("read %s's engine: %w", t, err)
	}
	switch {
	case kind.String != "BASE TABLE" && kind.String != "SYSTEM VERSIONED":
		got.err = notInPlace(FallbackEngine, "%s is a %s", t, kind.String)
	case strings.Contains(strings.ToLower(options.String), "partitioned"):
		got.err = notInPlace(FallbackEngine, "%s is partitioned", t)
	case !plainName.MatchString(t.db) || !plainName.MatchString(t.name):
		got.err = notInPlace(FallbackEngine, "%s's file name is encoded", t)
	case engine.String == "InnoDB" || engine.String == "Aria" || engine.String == "MyISAM":
		got.engine = engine.String
	default:
		got.err = notInPlace(FallbackEngine, "%s is of engine %s", t, engine.String)
	}
	k.mu.Lock()
	if k.m == nil {
		k.m = map[tableRef]tableKind{}
	}
	k.m[t] = got
	k.mu.Unlock()
	return got.engine, got.err
}

// known reports whether k has read table t.
func (k *tableKinds) known(t tableRef) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.m[t]
	return ok
}

// tableFiles are the files of a table of each engine restored in place,
// by extension.
var tableFiles = map[string][]string{
	"InnoDB": {".ibd"},
	"Aria":   {".MAD", ".MAI"},
	"MyISAM": {".MYD", ".MYI"},
}

// restoredFiles are the paths in the slot's clone of the files the
// restore of plan replaced.
func restoredFiles(data string, plan []tablePlan) []string {
	var out []string
	for _, t := range plan {
		for _, ext := range tableFiles[t.engine] {
			out = append(out, filepath.Join(data, t.ref.db, t.ref.name+ext))
		}
	}
	return out
}

// addedRows is the most rows a holder may have written to a table of
// inplaceBase.counted for the reset to delete the rows it added rather
// than import the table: on MySQL the import costs about 10 ms of server
// CPU more than a DELETE of three rows and the counter's ALTER TABLE, and
// still 3-4 ms more than those of 1,000 rows (docs/benchmarks.md).
const addedRows = 1000

// restore gives one table the template's rows back: the rows a holder
// added are deleted (deleteAdded) or the rows it changed written back
// (writeBack) where that can be done, otherwise the table gets the
// template's files back (and an InnoDB table's rows are kept to write
// back next time, keepRows).
func (j inplaceJob) restore(ctx context.Context, conn *sql.Conn, t tablePlan) error {
	name := quote.Ident(t.ref.db) + "." + quote.Ident(t.ref.name)
	if done, err := j.deleteAdded(ctx, conn, name, t); err != nil {
		return err
	} else if done {
		return j.counterBack(ctx, conn, name, t)
	}
	if done, err := j.writeBack(ctx, conn, name, t); err != nil {
		return err
	} else if done {
		return j.counterBack(ctx, conn, name, t)
	}
	for _, ext := range tableFiles[t.engine] {
		if _, err := os.Stat(filepath.Join(j.src, t.ref.db, t.ref.name+ext)); err != nil {
			return notInPlace(FallbackEngine, "%s has no %s file in the template: %v", t.ref, ext, err)
		}
	}
	if t.engine == "InnoDB" {
		if _, err := conn.ExecContext(ctx, "ALTER TABLE "+name+" DISCARD TABLESPACE"); err != nil {
			return fmt.Errorf("discard tablespace: %w", err)
		}
		if err := j.cloneFile(filepath.Join(j.src, t.ref.db, t.ref.name+".ibd"), t.ref, ".ibd"); err != nil {
			return err
		}
		cfg, withMeta := j.meta.Get(t.ref.db, t.ref.name)
		if withMeta {
			if err := j.placeFile("export metadata", t.ref, ".cfg", func(out *os.File) error {
				_, err := out.Write(cfg)
				return err
			}); err != nil {
				return err
			}
		}
		_, err := conn.ExecContext(ctx, "ALTER TABLE "+name+" IMPORT TABLESPACE")
		if withMeta {
			_ = os.Remove(filepath.Join(j.data, t.ref.db, t.ref.name+".cfg"))
		}
		if err != nil {
			return fmt.Errorf("import tablespace: %w", err)
		}
		if err := j.counterBack(ctx, conn, name, t); err != nil {
			return err
		}
		return j.keepRows(ctx, conn, name, t)
	}
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES "+name); err != nil {
		return fmt.Errorf("close the table: %w", err)
	}
	for _, ext := range tableFiles[t.engine] {
		if err := j.cloneFile(filepath.Join(j.src, t.ref.db, t.ref.name+ext), t.ref, ext); err != nil {
			return err
		}
	}
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES "+name); err != nil {
		return fmt.Errorf("close the table: %w", err)
	}
	return nil
}

// deleteAdded deletes the rows the holder added to InnoDB table t, where
// t is one of inplaceBase.counted and the holder wrote at most addedRows
// rows: every row, in a table the template has empty; in one the holder
// only inserted into, the rows from the template's AUTO_INCREMENT counter
// on, and then it counts the rows left. It reports whether the table has
// the template's rows again; if not, the caller imports it. Foreign key
// checks are off: nothing cascades to other tables.
func (j inplaceJob) deleteAdded(ctx context.Context, conn *sql.Conn, name string, t tablePlan) (bool, error) {
	c, ok := j.base.counted[t.ref]
	if !ok || t.engine != "InnoDB" || t.writes.rows > addedRows {
		return false, nil
	}
	if c.Rows == 0 {
		if _, err := conn.ExecContext(ctx, "DELETE FROM "+name); err != nil {
			return false, fmt.Errorf("delete the holder's rows: %w", err)
		}
		return true, nil
	}
	next, known := j.base.counters[t.ref]
	if c.Column == "" || !known || !t.writes.inserted {
		return false, nil
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s >= %d", name, quote.Ident(c.Column), next)); err != nil {
		return false, fmt.Errorf("delete the holder's rows: %w", err)
	}
	// A row inserted with a value below the counter (a gap the template
	// left) is still there: the count tells.
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+name).Scan(&n); err != nil {
		return false, fmt.Errorf("count the rows left: %w", err)
	}
	return n == c.Rows, nil
}

// counterBack sets InnoDB table t's AUTO_INCREMENT counter, which the
// holder's inserts moved and neither the DELETE nor an import that keeps
// the table's own counter (mariadb.Changes.ImportKeepsCounter) puts back,
// to the template's (inplaceBase.counters, where the flavour needs them).
// Rows only deleted left it as it was.
func (j inplaceJob) counterBack(ctx context.Context, conn *sql.Conn, name string, t tablePlan) error {
	n, ok := j.base.counters[t.ref]
	if !ok || t.writes.deleted {
		return nil
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s AUTO_INCREMENT = %d", name, n)); err != nil {
		return fmt.Errorf("set AUTO_INCREMENT back: %w", err)
	}
	return nil
}

// cloneFile puts src as table t's file of extension ext in the slot's
// clone: a clone of its extents (a copy where the filesystem cannot),
// owned as the database directory is (the slot server's id), moved over
// the old file.
func (j inplaceJob) cloneFile(src string, t tableRef, ext string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("clone %s: %w", src, err)
	}
	defer in.Close()
	return j.placeFile(src, t, ext, func(out *os.File) error {
		if err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); err != nil {
			if _, err := io.Copy(out, in); err != nil {
				return fmt.Errorf("copy: %w", err)
			}
		}
		return nil
	})
}

// placeFile puts what fill writes as table t's file of extension ext in
// the slot's clone, owned as the database directory is (the slot server's
// id), moved over the old file; what names the source in errors.
func (j inplaceJob) placeFile(what string, t tableRef, ext string, fill func(out *os.File) error) error {
	dir := filepath.Join(j.data, t.db)
	dst := filepath.Join(dir, t.name+ext)
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return fmt.Errorf("clone %s: %w", what, err)
	}
	tmp := filepath.Join(dir, "#pristine-restore-"+randomHex(4)+ext)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o660)
	if err != nil {
		return fmt.Errorf("clone %s: %w", what, err)
	}
	ok := false
	defer func() {
		if !ok {
			out.Close()
			os.Remove(tmp)
		}
	}()
	if err := fill(out); err != nil {
		return fmt.Errorf("clone %s: %w", what, err)
	}
	if err := out.Chown(int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("clone %s: give it to the server's id: %w", what, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("clone %s: %w", what, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("clone %s: %w", what, err)
	}
	ok = true
	return nil
}
