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
func danglingForeignKeys(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `
SELECT k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.COLUMN_NAME,
       k.REFERENCED_TABLE_SCHEMA, k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME,
       t.TABLE_NAME IS NULL
FROM information_schema.KEY_COLUMN_USAGE k
LEFT JOIN information_schema.TABLES t
  ON t.TABLE_SCHEMA = k.REFERENCED_TABLE_SCHEMA AND t.TABLE_NAME = k.REFERENCED_TABLE_NAME
LEFT JOIN information_schema.COLUMNS c
  ON c.TABLE_SCHEMA = k.REFERENCED_TABLE_SCHEMA AND c.TABLE_NAME = k.REFERENCED_TABLE_NAME
 AND c.COLUMN_NAME = k.REFERENCED_COLUMN_NAME
WHERE k.REFERENCED_TABLE_NAME IS NOT NULL AND c.COLUMN_NAME IS NULL
  AND k.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION`)
	if err != nil {
		return nil, fmt.Errorf("check foreign keys: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var schema, table, name, col, refSchema, refTable, refCol string
		var noTable bool
		if err := rows.Scan(&schema, &table, &name, &col, &refSchema, &refTable, &refCol, &noTable); err != nil {
			return nil, fmt.Errorf("check foreign keys: %w", err)
		}
		missing := fmt.Sprintf("column %s.%s.%s does not exist", refSchema, refTable, refCol)
		if noTable {
			missing = fmt.Sprintf("table %s.%s does not exist", refSchema, refTable)
		}
		out = append(out, fmt.Sprintf("foreign key %s.%s.%s (%s) references %s.%s(%s), but %s", schema, table, name, col, refSchema, refTable, refCol, missing))
	}
	return out, rows.Err()
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
