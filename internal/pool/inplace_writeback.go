package pool

// How the in-place reset writes a small InnoDB table's rows back, where
// the flavour's IMPORT TABLESPACE costs more than the statements
// (mariadb.Changes.WriteBack): the template's rows of the table are read
// once per pool, from the table just imported, and kept (rowCache); at a
// later reset the rows the holder deleted are inserted again, and where it
// also inserted or updated, the rows that differ from the template's are
// deleted and the template's inserted. CHECKSUM TABLE then has to give the
// template's checksum, or the table is imported after all.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/pristinedb/pristine/internal/quote"
)

// writeBackRows is the most rows a table may have for its rows to be kept
// and written back.
const writeBackRows = 5000

// writeBackBytes bounds the rows a pool keeps, all tables together.
const writeBackBytes = 64 << 20

// insertBytes bounds the values of one INSERT of rows written back, well
// under the server's max_allowed_packet (64 MiB by default).
const insertBytes = 4 << 20

// writeBackTypes are the column types whose values come back from the
// server's binary protocol, with the connection's character set binary
// and its time zone UTC, in a form that inserts the same value again.
var writeBackTypes = map[string]bool{
	"tinyint": true, "smallint": true, "mediumint": true, "int": true, "bigint": true,
	"decimal": true, "float": true, "double": true, "bit": true,
	"char": true, "varchar": true, "binary": true, "varbinary": true,
	"tinytext": true, "text": true, "mediumtext": true, "longtext": true,
	"tinyblob": true, "blob": true, "mediumblob": true, "longblob": true,
	"enum": true, "set": true,
	"date": true, "datetime": true, "timestamp": true, "time": true, "year": true,
}

// writeBackSession makes the admin session read and write values as they
// are stored: no character set conversion, UTC, and no SQL mode that
// would refuse or change a stored value (an AUTO_INCREMENT column's 0
// stays 0). resetSession puts back the session a connection of this
// package's admin has (the driver's utf8mb4_general_ci, the server's
// defaults).
const (
	writeBackSession = "SET NAMES binary, time_zone = '+00:00', sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"
	resetSession     = "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci, time_zone = DEFAULT, sql_mode = DEFAULT"
)

// rowCache keeps, per table, the template's rows for the in-place reset
// to write back, or why a table's are not kept. Every slot of a pool is a
// clone of the same template: one cache serves them all. The zero value
// is ready to use.
type rowCache struct {
	mu    sync.Mutex
	m     map[tableRef]*keptRows
	bytes int64
}

// keptRows are one table's rows as the template has them.
type keptRows struct {
	// err says why the table's rows are not written back; nil: they are.
	err error
	// cols are the columns written back, quoted and joined (every column
	// but the generated ones); key is the primary key's, likewise.
	cols, key string
	// ncols and nkey are how many of each; cols starts with the key's.
	ncols, nkey int
	// rows are the rows (their values in cols's order, each encoded by
	// appendValue) by their key (the key's values, the rows' start).
	rows map[string][]byte
	// sum is the table's CHECKSUM TABLE.
	sum int64
}

// get is table t's entry, nil when none is kept.
func (c *rowCache) get(t tableRef) *keptRows {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[t]
}

// put keeps tr as table t's entry, or, past writeBackBytes, that it was
// left out.
func (c *rowCache) put(t tableRef, tr *keptRows) {
	var size int64
	for k, r := range tr.rows {
		size += int64(len(k) + len(r) + 64)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[tableRef]*keptRows{}
	}
	if _, ok := c.m[t]; ok {
		return
	}
	if c.bytes+size > writeBackBytes {
		tr = &keptRows{err: fmt.Errorf("the pool keeps %d MiB of rows already", c.bytes>>20)}
		size = 0
	}
	c.bytes += size
	c.m[t] = tr
}

// drop marks table t's rows as not written back, for why.
func (c *rowCache) drop(t tableRef, why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[t] = &keptRows{err: why}
}

// writeBack gives InnoDB table t (quoted as name) the template's rows
// back from the kept rows, where the pool keeps them and the holder wrote
// at most addedRows rows. It reports whether the table has the template's
// rows again (its checksum is the template's); if not, the caller imports
// it.
func (j inplaceJob) writeBack(ctx context.Context, conn *sql.Conn, name string, t tablePlan) (bool, error) {
	if j.rows == nil || t.engine != "InnoDB" || t.writes.rows == 0 || t.writes.rows > addedRows {
		return false, nil // t.writes.rows == 0: only a cascade reached it
	}
	tr := j.rows.get(t.ref)
	if tr == nil || tr.err != nil {
		return false, nil
	}
	if _, err := conn.ExecContext(ctx, writeBackSession); err != nil {
		return false, fmt.Errorf("write rows back: %w", err)
	}
	ok, err := j.writeRows(ctx, conn, name, t, tr)
	if _, rerr := conn.ExecContext(ctx, resetSession); rerr != nil && err == nil {
		err = fmt.Errorf("write rows back: %w", rerr)
	}
	if err != nil || !ok {
		return false, err
	}
	sum, err := checksum(ctx, conn, name)
	if err != nil {
		return false, err
	}
	if sum != tr.sum {
		j.rows.drop(t.ref, fmt.Errorf("its rows written back had checksum %d, the template's %d", sum, tr.sum))
		return false, nil
	}
	return true, nil
}

// writeRows does writeBack's statements. Where the holder only deleted,
// the rows whose keys are missing are inserted; otherwise every row that
// is not one of the template's is deleted first (the rows left are the
// template's, so no unique key refuses the inserts), then every template
// row missing inserted. It reports false, having changed nothing, when a
// row's key is not the template's where the holder only deleted.
func (j inplaceJob) writeRows(ctx context.Context, conn *sql.Conn, name string, t tablePlan, tr *keptRows) (bool, error) {
	present := make(map[string]bool, len(tr.rows))
	var stale [][]byte // keys of rows to delete
	cols := tr.key
	if !t.writes.deleted {
		cols = tr.cols
	}
	err := eachRow(ctx, conn, "SELECT "+cols+" FROM "+name, func(row []byte, keyLen int) error {
		k := string(row[:keyLen])
		if want, ok := tr.rows[k]; ok && (t.writes.deleted || bytes.Equal(want, row)) {
			present[k] = true
			return nil
		}
		stale = append(stale, bytes.Clone(row[:keyLen]))
		return nil
	}, tr.nkey)
	if err != nil {
		return false, fmt.Errorf("read the rows: %w", err)
	}
	if t.writes.deleted && len(stale) > 0 {
		return false, nil
	}
	for len(stale) > 0 {
		n := min(len(stale), math.MaxUint16/tr.nkey)
		if err := execRows(ctx, conn, deleteKeys(name, tr.key, tr.nkey, n), stale[:n]); err != nil {
			return false, fmt.Errorf("delete the holder's rows: %w", err)
		}
		stale = stale[n:]
	}
	var missing [][]byte
	for k, r := range tr.rows {
		if !present[k] {
			missing = append(missing, r)
		}
	}
	for len(missing) > 0 {
		n, size := 0, 0
		for n < min(len(missing), math.MaxUint16/tr.ncols) && (n == 0 || size+len(missing[n]) <= insertBytes) {
			size += len(missing[n])
			n++
		}
		if err := execRows(ctx, conn, insertRows(name, tr.cols, tr.ncols, n), missing[:n]); err != nil {
			return false, fmt.Errorf("insert the template's rows: %w", err)
		}
		missing = missing[n:]
	}
	return true, nil
}

// keepRows reads InnoDB table t (quoted as name), just imported from the
// template, into the pool's rows to write back, when the flavour writes
// rows back and nothing is kept of it yet. A table that cannot be written
// back is kept with why.
func (j inplaceJob) keepRows(ctx context.Context, conn *sql.Conn, name string, t tablePlan) error {
	if j.rows == nil || t.engine != "InnoDB" || j.rows.get(t.ref) != nil {
		return nil
	}
	tr, err := j.readRows(ctx, conn, name, t.ref)
	if err != nil {
		return fmt.Errorf("keep the template's rows: %w", err)
	}
	j.rows.put(t.ref, tr)
	return nil
}

// readRows reads what writeBack needs of table t, or why it cannot write
// t's rows back.
func (j inplaceJob) readRows(ctx context.Context, conn *sql.Conn, name string, t tableRef) (*keptRows, error) {
	for _, kids := range j.base.children {
		for _, c := range kids {
			if c == t {
				return &keptRows{err: errors.New("a cascading foreign key reaches it")}, nil
			}
		}
	}
	var triggers, fulltext int
	if err := conn.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?),"+
		" (SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_TYPE = 'FULLTEXT')",
		t.db, t.name, t.db, t.name).Scan(&triggers, &fulltext); err != nil {
		return nil, err
	}
	switch {
	case triggers > 0:
		return &keptRows{err: errors.New("it has triggers, which an INSERT would run")}, nil
	case fulltext > 0:
		return &keptRows{err: errors.New("it has a FULLTEXT index, whose document ids an INSERT gives anew")}, nil
	}
	rows, err := conn.QueryContext(ctx, "SELECT c.COLUMN_NAME, c.DATA_TYPE, c.EXTRA, s.SEQ_IN_INDEX FROM information_schema.COLUMNS c"+
		" LEFT JOIN information_schema.STATISTICS s ON s.TABLE_SCHEMA = c.TABLE_SCHEMA AND s.TABLE_NAME = c.TABLE_NAME AND s.COLUMN_NAME = c.COLUMN_NAME AND s.INDEX_NAME = 'PRIMARY'"+
		" WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ? ORDER BY c.ORDINAL_POSITION", t.db, t.name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var key []string
	var other []string
	var refused string
	for rows.Next() {
		var col, typ, extra string
		var seq sql.NullInt64
		if err := rows.Scan(&col, &typ, &extra, &seq); err != nil {
			return nil, err
		}
		extra = strings.ToUpper(extra)
		if strings.Contains(extra, "VIRTUAL GENERATED") || strings.Contains(extra, "STORED GENERATED") {
			continue // computed from the others
		}
		if !writeBackTypes[strings.ToLower(typ)] && refused == "" {
			refused = fmt.Sprintf("its column %s is of type %s", col, typ)
		}
		if seq.Valid {
			for len(key) < int(seq.Int64) {
				key = append(key, "")
			}
			key[seq.Int64-1] = quote.Ident(col)
		} else {
			other = append(other, quote.Ident(col))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch {
	case refused != "":
		return &keptRows{err: errors.New(refused)}, nil
	case len(key) == 0 || slices.Contains(key, ""):
		return &keptRows{err: errors.New("it has no primary key")}, nil
	}
	tr := &keptRows{key: strings.Join(key, ", "), nkey: len(key), ncols: len(key) + len(other), rows: map[string][]byte{}}
	tr.cols = strings.Join(append(key, other...), ", ")
	if _, err := conn.ExecContext(ctx, writeBackSession); err != nil {
		return nil, err
	}
	err = eachRow(ctx, conn, fmt.Sprintf("SELECT %s FROM %s LIMIT %d", tr.cols, name, writeBackRows+1), func(row []byte, keyLen int) error {
		tr.rows[string(row[:keyLen])] = bytes.Clone(row)
		return nil
	}, tr.nkey)
	if _, rerr := conn.ExecContext(ctx, resetSession); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	if len(tr.rows) > writeBackRows {
		return &keptRows{err: fmt.Errorf("it has more than %d rows", writeBackRows)}, nil
	}
	if tr.sum, err = checksum(ctx, conn, name); err != nil {
		return nil, err
	}
	return tr, nil
}

// checksum is table name's CHECKSUM TABLE.
func checksum(ctx context.Context, conn *sql.Conn, name string) (int64, error) {
	var table string
	var sum sql.NullInt64
	if err := conn.QueryRowContext(ctx, "CHECKSUM TABLE "+name).Scan(&table, &sum); err != nil {
		return 0, fmt.Errorf("checksum: %w", err)
	}
	if !sum.Valid {
		return 0, fmt.Errorf("checksum: %s has none", name)
	}
	return sum.Int64, nil
}

// eachRow runs q as a prepared statement (the binary protocol: every
// value as the server stores it) and calls f with each row encoded
// (appendValue) and the length of its first nkey values' encoding.
func eachRow(ctx context.Context, conn *sql.Conn, q string, f func(row []byte, keyLen int) error, nkey int) error {
	st, err := conn.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		buf = buf[:0]
		keyLen := 0
		for i, v := range vals {
			if buf, err = appendValue(buf, v); err != nil {
				return err
			}
			if i == nkey-1 {
				keyLen = len(buf)
			}
		}
		if err := f(buf, keyLen); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Value tags of appendValue's encoding.
const (
	tagNull    = 'n'
	tagInt     = 'i'
	tagFloat32 = 'f'
	tagFloat64 = 'd'
	tagBytes   = 'b'
)

// appendValue appends v, a value of the driver's binary protocol, to
// buf: a tag, then the value (integers and floats in 8 or 4 bytes,
// bytes after their length), so that two values encode alike exactly when
// they are the same.
func appendValue(buf []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(buf, tagNull), nil
	case int64:
		return binary.BigEndian.AppendUint64(append(buf, tagInt), uint64(v)), nil
	case float32:
		return binary.BigEndian.AppendUint32(append(buf, tagFloat32), math.Float32bits(v)), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(buf, tagFloat64), math.Float64bits(v)), nil
	case []byte:
		return append(binary.AppendUvarint(append(buf, tagBytes), uint64(len(v))), v...), nil
	}
	return nil, fmt.Errorf("a value of type %T", v)
}

// decodeValues appends the values encoded in buf to args.
func decodeValues(args []any, buf []byte) ([]any, error) {
	for len(buf) > 0 {
		tag := buf[0]
		buf = buf[1:]
		switch {
		case tag == tagNull:
			args = append(args, nil)
		case tag == tagInt && len(buf) >= 8:
			args = append(args, int64(binary.BigEndian.Uint64(buf)))
			buf = buf[8:]
		case tag == tagFloat32 && len(buf) >= 4:
			args = append(args, float64(math.Float32frombits(binary.BigEndian.Uint32(buf))))
			buf = buf[4:]
		case tag == tagFloat64 && len(buf) >= 8:
			args = append(args, math.Float64frombits(binary.BigEndian.Uint64(buf)))
			buf = buf[8:]
		case tag == tagBytes:
			n, w := binary.Uvarint(buf)
			if w <= 0 || uint64(len(buf)-w) < n {
				return nil, errors.New("a value cut short")
			}
			args = append(args, buf[w:w+int(n)])
			buf = buf[w+int(n):]
		default:
			return nil, fmt.Errorf("a value of tag %q cut short", tag)
		}
	}
	return args, nil
}

// execRows runs q with the values of rows (each encoded by appendValue)
// as its arguments.
func execRows(ctx context.Context, conn *sql.Conn, q string, rows [][]byte) error {
	var args []any
	for _, r := range rows {
		var err error
		if args, err = decodeValues(args, r); err != nil {
			return err
		}
	}
	_, err := conn.ExecContext(ctx, q, args...)
	return err
}

// deleteKeys deletes n rows of table name by their key (nkey columns,
// quoted and joined).
func deleteKeys(name, key string, nkey, n int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", nkey), ", ") + ")"
	return "DELETE FROM " + name + " WHERE (" + key + ") IN (" + strings.TrimSuffix(strings.Repeat(one+", ", n), ", ") + ")"
}

// insertRows inserts n rows of ncols columns (cols, quoted and joined)
// into table name.
func insertRows(name, cols string, ncols, n int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", ncols), ", ") + ")"
	return "INSERT INTO " + name + " (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}
