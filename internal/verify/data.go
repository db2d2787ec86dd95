package verify

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/pristinedb/pristine/internal/quote"
)

// checksums reads every base table's CHECKSUM TABLE ... EXTENDED on workers
// connections. The server computes it from every row's values, summed so row
// order does not matter; it runs inside the server, so no row crosses the
// connection. A table the server cannot read gets its error as its checksum.
func (r *reader) checksums(db *sql.DB, workers int) error {
	if len(r.tables) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	work := make(chan int)
	sums := make([]string, len(r.tables))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c, err := setupConn(ctx, db)
			if err != nil {
				errs[w] = err
				cancel()
				for range work {
				}
				return
			}
			defer c.Close()
			for i := range work {
				t := r.tables[i]
				var name string
				var sum sql.NullString
				var err error
				if !r.flavor.ChecksumTableStable() {
					if sum, err = rowsDigest(ctx, c, t[0], t[1]); err != nil {
						errs[w] = err
						cancel()
						continue
					}
				} else {
					err = c.QueryRowContext(ctx, "CHECKSUM TABLE "+quote.Qualified(t[0], t[1])+" EXTENDED").Scan(&name, &sum)
				}
				switch {
				case ctx.Err() != nil:
					errs[w] = ctx.Err()
				case err != nil:
					sums[i] = "error: " + err.Error()
				case !sum.Valid:
					sums[i] = "unreadable (CHECKSUM TABLE returned NULL)"
				default:
					sums[i] = sum.String
				}
			}
		}(w)
	}
	for i := range r.tables {
		select {
		case work <- i:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("checksum tables: %w", err)
		}
	}
	for i, t := range r.tables {
		r.s.objs[objKey{"table", quote.Qualified(r.canon.schema(t[0]), t[1])}].set("rows (checksum)", sums[i])
	}
	return nil
}

// rowsDigest is MySQL's row checksum of a table: its CHECKSUM TABLE reads
// the stored record, which holds the hidden and virtual columns' buffers
// (a functional index's, a VIRTUAL column's) as they happen to be, and
// JSON in its binary form, which keeps each number's integer type (a
// BIGINT from arithmetic, a small int from text): equal rows can sum
// differently. This digest is of the stored, visible or INVISIBLE,
// columns' values as text (JSON as its canonical text), NULL told from
// empty, summed over the rows so their order does not matter, with the
// row count. It runs inside the server.
func rowsDigest(ctx context.Context, c *sql.Conn, schema, table string) (sql.NullString, error) {
	rows, err := c.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND EXTRA NOT LIKE '%VIRTUAL GENERATED%' ORDER BY ORDINAL_POSITION`, schema, table)
	if err != nil {
		return sql.NullString{}, err
	}
	var parts []string
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			rows.Close()
			return sql.NullString{}, err
		}
		as := "BINARY"
		if strings.EqualFold(typ, "json") {
			as = "CHAR"
		}
		parts = append(parts, "ISNULL("+quote.Ident(col)+")", "CAST("+quote.Ident(col)+" AS "+as+")")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sql.NullString{}, err
	}
	if len(parts) == 0 {
		return sql.NullString{}, fmt.Errorf("table %s has no stored columns", quote.Qualified(schema, table))
	}
	// SHA2, not MD5: MySQL 9.7 has no MD5() (it is taken for a stored
	// function). Two 60-bit slices of each row's hash, summed exactly
	// (DECIMAL) and XORed.
	row := "SHA2(CONCAT_WS(0x1f, " + strings.Join(parts, ", ") + "), 256)"
	var sum sql.NullString
	err = c.QueryRowContext(ctx, "SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CAST(CONV(LEFT("+row+", 15), 16, 10) AS UNSIGNED)), 0), ':', COALESCE(BIT_XOR(CAST(CONV(RIGHT("+row+", 15), 16, 10) AS UNSIGNED)), 0)) FROM "+quote.Qualified(schema, table)).Scan(&sum)
	if err != nil {
		// Not a value: the same error on both sides would read as equal.
		return sum, fmt.Errorf("digest the rows of %s: %w", quote.Qualified(schema, table), err)
	}
	return sum, nil
}
