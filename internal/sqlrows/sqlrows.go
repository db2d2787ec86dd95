// Package sqlrows reads a query's result as text, for the code that reads
// a server's catalog and grant tables (capture, verify), where every
// column is wanted as a string whatever its type.
package sqlrows

import (
	"context"
	"database/sql"
)

// Queryer is a *sql.DB, *sql.Conn or *sql.Tx.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Each runs q on db and calls f with the result's column names and each
// row, every value as text and a NULL as null. An error of f stops the
// reading and is returned as it is; the query's own errors are returned
// as the driver gave them, for the caller to name the statement.
func Each(ctx context.Context, db Queryer, q, null string, f func(cols, row []string) error) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = null
			if v.Valid {
				row[i] = v.String
			}
		}
		if err := f(cols, row); err != nil {
			return err
		}
	}
	return rows.Err()
}
