package template

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/pristinedb/pristine/internal/catalog"
)

// danglingForeignKeys lists the foreign keys whose referenced table or
// column does not exist. A dump loads with FOREIGN_KEY_CHECKS=0, which lets
// InnoDB create such keys silently; every insert into their table then
// fails in the clones. Each is named as schema.table.constraint, with what
// is missing.
//
// The keys and the columns are read in two plain queries and joined here:
// a join of information_schema views in the server re-reads them per row
// and took over a second on a schema of 1,000 tables.
func danglingForeignKeys(ctx context.Context, db *sql.DB) ([]string, error) {
	const user = "TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')"
	type column struct{ schema, table, column string }
	type key struct {
		schema, table, name, col string
		ref                      column
	}
	var keys []key
	err := queryRows(ctx, db, `SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME,
       REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE
WHERE REFERENCED_TABLE_NAME IS NOT NULL AND `+user+`
ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`, func(r []string) {
		keys = append(keys, key{r[0], r[1], r[2], r[3], column{r[4], r[5], r[6]}})
	})
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	// Every table and view has a column: a table with none listed does
	// not exist. Names are compared as the server lists them.
	cols := map[column]bool{}
	tables := map[column]bool{}
	err = queryRows(ctx, db, `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE `+user, func(r []string) {
		cols[column{r[0], r[1], strings.ToLower(r[2])}] = true
		tables[column{r[0], r[1], ""}] = true
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		if cols[column{k.ref.schema, k.ref.table, strings.ToLower(k.ref.column)}] {
			continue
		}
		missing := fmt.Sprintf("column %s.%s.%s does not exist", k.ref.schema, k.ref.table, k.ref.column)
		if !tables[column{k.ref.schema, k.ref.table, ""}] {
			missing = fmt.Sprintf("table %s.%s does not exist", k.ref.schema, k.ref.table)
		}
		out = append(out, fmt.Sprintf("foreign key %s.%s.%s (%s) references %s.%s(%s), but %s", k.schema, k.table, k.name, k.col, k.ref.schema, k.ref.table, k.ref.column, missing))
	}
	return out, nil
}

// queryRows runs a query of string columns and hands each row to f.
func queryRows(ctx context.Context, db *sql.DB, q string, f func([]string)) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("check foreign keys: %w", err)
	}
	defer rows.Close()
	n, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("check foreign keys: %w", err)
	}
	vals := make([]sql.NullString, len(n))
	ptrs := make([]any, len(n))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("check foreign keys: %w", err)
		}
		r := make([]string, len(vals))
		for i, v := range vals {
			r[i] = v.String
		}
		f(r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check foreign keys: %w", err)
	}
	return nil
}

// checkForeignKeys records the dangling foreign keys of a loaded template
// as warnings, one per key, and reports them.
func (b *Builder) checkForeignKeys(ctx context.Context, db *sql.DB, m *catalog.Meta) error {
	bad, err := danglingForeignKeys(ctx, db)
	if err != nil {
		return err
	}
	for _, k := range bad {
		w := k + ": inserts into that table fail in every clone (the dump was loaded with FOREIGN_KEY_CHECKS=0, which hid it)"
		m.Warnings = append(m.Warnings, w)
		b.progress("warning: %s", w)
	}
	return nil
}

// inputName is how a build's SQL input is named in messages: the path the
// user gave, or standard input for a spooled one.
func (b *Builder) inputName(path string) string {
	if strings.HasPrefix(path, b.cat.Root().Path+"/tmp/stdin-") {
		return "standard input"
	}
	return path
}

// memoryRows warns about MEMORY tables that hold rows: their rows live only
// in the running server, so every clone of the template has them empty.
func memoryRows(ctx context.Context, db *sql.DB) string {
	rows, err := db.QueryContext(ctx, `SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES
		WHERE ENGINE = 'MEMORY' AND TABLE_ROWS > 0 AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("MEMORY tables lose their rows when the server stops, so every clone has %s empty: use InnoDB for rows the tests need", strings.Join(names, ", "))
}
