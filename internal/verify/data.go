package verify

import (
	"context"
	"database/sql"
	"fmt"
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
				err := c.QueryRowContext(ctx, "CHECKSUM TABLE "+quote.Qualified(t[0], t[1])+" EXTENDED").Scan(&name, &sum)
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
