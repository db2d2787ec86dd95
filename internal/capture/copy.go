package capture

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/pristinedb/pristine/internal/quote"

	"github.com/go-sql-driver/mysql"
)

// A chunk is a table, or a primary-key range of one, copied by one worker.
type chunk struct {
	t      *table
	lo, hi *int64 // pk >= lo AND pk < hi; nil is unbounded
}

func (c chunk) String() string {
	if c.lo == nil && c.hi == nil {
		return c.t.String()
	}
	return fmt.Sprintf("%s (%s from %s to %s)", c.t, c.t.pk, fmtBound(c.lo), fmtBound(c.hi))
}

func fmtBound(b *int64) string {
	if b == nil {
		return "end"
	}
	return strconv.FormatInt(*b, 10)
}

// selectSQL reads the chunk's stored columns (see selectExpr).
func (c chunk) selectSQL() string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, col := range c.t.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(col.sel)
	}
	b.WriteString(" FROM " + c.t.quoted())
	var where []string
	if c.lo != nil {
		where = append(where, quote.Ident(c.t.pk)+" >= "+strconv.FormatInt(*c.lo, 10))
	}
	if c.hi != nil {
		where = append(where, quote.Ident(c.t.pk)+" < "+strconv.FormatInt(*c.hi, 10))
	}
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	return b.String()
}

// split cuts a big table with an integer primary key into ranges of about
// chunkRows rows, reading the key's bounds inside the snapshot.
func split(ctx context.Context, src *sql.Conn, t *table, chunkRows int64) ([]chunk, error) {
	if t.pk == "" || t.rows <= chunkRows || chunkRows <= 0 {
		return []chunk{{t: t}}, nil
	}
	var lo, hi sql.NullInt64
	q := fmt.Sprintf("SELECT MIN(%[1]s), MAX(%[1]s) FROM %[2]s", quote.Ident(t.pk), t.quoted())
	if err := src.QueryRowContext(ctx, q).Scan(&lo, &hi); err != nil {
		return nil, fmt.Errorf("key range of %s: %w", t, err)
	}
	if !lo.Valid || hi.Int64-lo.Int64 < 2 {
		return []chunk{{t: t}}, nil
	}
	// Ranges are buffered in memory: keep each to about 32 MiB.
	if avg := t.bytes / max(t.rows, 1); avg > 0 && chunkRows*avg > 32<<20 {
		chunkRows = max(32<<20/avg, 1000)
	}
	n := (t.rows + chunkRows - 1) / chunkRows
	step := (hi.Int64 - lo.Int64) / n
	if step < 1 {
		step = 1
	}
	var out []chunk
	var prev *int64
	for b := lo.Int64 + step; b <= hi.Int64; b += step {
		v := b
		out = append(out, chunk{t: t, lo: prev, hi: &v})
		prev = &v
	}
	return append(out, chunk{t: t, lo: prev}), nil
}

// counters are the progress of a copy.
type counters struct{ rows, bytes atomic.Int64 }

// eachRow runs q on conn and calls fn with every row's values, nil for
// NULL; the slices are valid until fn returns. It reads through the
// driver, below database/sql, which would lock, convert and copy every
// value again for Scan. The queries select every column as text (see
// selectExpr), so the driver hands back the bytes the server sent.
func eachRow(ctx context.Context, conn *sql.Conn, q string, fn func(vals [][]byte) error) error {
	return conn.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("the MySQL driver cannot run queries directly (%T)", dc)
		}
		rows, err := qc.QueryContext(ctx, q, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, len(rows.Columns()))
		vals := make([][]byte, len(dest))
		for {
			if err := rows.Next(dest); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			for i, v := range dest {
				switch v := v.(type) {
				case nil:
					vals[i] = nil
				case []byte:
					vals[i] = v
				default: // not expected from the text protocol of a string column
					vals[i] = fmt.Appendf(vals[i][:0], "%v", v)
				}
			}
			if err := fn(vals); err != nil {
				return err
			}
		}
	})
}

// writeTSV writes the rows of q on conn to w as LOAD DATA's default text.
func writeTSV(ctx context.Context, conn *sql.Conn, q string, w io.Writer, n *counters) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	var nrows, nbytes int64
	err := eachRow(ctx, conn, q, func(vals [][]byte) error {
		for i, v := range vals {
			if i > 0 {
				bw.WriteByte('\t')
			}
			if v == nil {
				bw.WriteString(`\N`)
				continue
			}
			nbytes += int64(len(v))
			writeEscaped(bw, v)
		}
		if err := bw.WriteByte('\n'); err != nil {
			return err // the loader has stopped: stop reading
		}
		nrows++
		if nrows%4096 == 0 {
			n.rows.Add(4096)
			n.bytes.Add(nbytes)
			nbytes = 0
		}
		return nil
	})
	n.rows.Add(nrows % 4096)
	n.bytes.Add(nbytes)
	if err != nil {
		return err
	}
	return bw.Flush()
}

// writeEscaped writes a field with LOAD DATA's default escaping.
func writeEscaped(bw *bufio.Writer, v []byte) {
	start := 0
	for i, b := range v {
		var esc string
		switch b {
		case '\\':
			esc = `\\`
		case '\t':
			esc = `\t`
		case '\n':
			esc = `\n`
		default:
			continue
		}
		bw.Write(v[start:i])
		bw.WriteString(esc)
		start = i + 1
	}
	bw.Write(v[start:])
}

// copyInsert copies a chunk with multi-row INSERTs of about 4 MiB, the
// alternative to LOAD DATA that bench-capture measures.
func copyInsert(ctx context.Context, src, dst *sql.Conn, c chunk, n *counters) error {
	names := make([]string, len(c.t.cols))
	for i, col := range c.t.cols {
		names[i] = quote.Ident(col.name)
	}
	head := "INSERT INTO " + c.t.quoted() + " (" + strings.Join(names, ",") + ") VALUES "
	buf := make([]byte, 0, 4<<20+64<<10)
	var writeErr error
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		q := head + string(buf)
		buf = buf[:0]
		// Chunks of one table run in parallel; InnoDB may pick one as a
		// deadlock victim, and a statement is safe to run again.
		var err error
		for try := 0; try < 5; try++ {
			if _, err = dst.ExecContext(ctx, q); !isDeadlock(err) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", c, err)
		}
		return nil
	}
	err := eachRow(ctx, src, c.selectSQL(), func(vals [][]byte) error {
		if len(buf) > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '(')
		for i, v := range vals {
			if i > 0 {
				buf = append(buf, ',')
			}
			switch {
			case v == nil:
				buf = append(buf, "NULL"...)
			case c.t.cols[i].bit:
				buf = append(buf, v...)
			default:
				buf = appendQuoted(buf, v)
			}
			n.bytes.Add(int64(len(v)))
		}
		buf = append(buf, ')')
		n.rows.Add(1)
		if len(buf) >= 4<<20 {
			writeErr = flush()
		}
		return writeErr
	})
	if writeErr != nil {
		return writeErr
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", c, err)
	}
	return flush()
}

func appendQuoted(buf []byte, v []byte) []byte {
	buf = append(buf, '\'')
	for _, b := range v {
		switch b {
		case '\'', '\\':
			buf = append(buf, '\\', b)
		case 0:
			buf = append(buf, '\\', '0')
		default:
			buf = append(buf, b)
		}
	}
	return append(buf, '\'')
}

// isDeadlock reports a deadlock or lock wait timeout that ended the
// statement (server errors 1213 and 1205).
func isDeadlock(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}
