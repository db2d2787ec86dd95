package template

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/catalog"
)

// userSchemas leaves out the system schemas.
const userSchemas = "TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')"

// schemaFacts is what the end-of-build checks read from information_schema,
// in one pass of three plain queries (each walks every table, which is
// what they cost): the foreign keys, the columns, and the tables with an
// AUTO_INCREMENT counter to persist or a MEMORY engine holding rows.
// Joins of information_schema views in the server re-read them per row
// (over a second at 1,000 tables): the facts are joined here.
type schemaFacts struct {
	keys     []foreignKey
	cols     map[tableColumn]bool // column names lower-cased
	tables   map[tableColumn]bool // column ""
	counters []capture.AutoIncColumn
	memory   []string // MEMORY tables with rows, as schema.table
}

type tableColumn struct{ schema, table, column string }

type foreignKey struct {
	schema, table, name, col string
	ref                      tableColumn
}

// readSchemaFacts reads the facts of db's user schemas.
func readSchemaFacts(ctx context.Context, db *sql.DB) (*schemaFacts, error) {
	f := &schemaFacts{cols: map[tableColumn]bool{}, tables: map[tableColumn]bool{}}
	err := queryRows(ctx, db, `SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME,
       REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE
WHERE REFERENCED_TABLE_NAME IS NOT NULL AND `+userSchemas+`
ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`, func(r []string) {
		f.keys = append(f.keys, foreignKey{r[0], r[1], r[2], r[3], tableColumn{r[4], r[5], r[6]}})
	})
	if err != nil {
		return nil, err
	}
	// Every table and view has a column: a table with none listed does
	// not exist. Names are compared as the server lists them.
	autoinc := map[tableColumn]string{}
	err = queryRows(ctx, db, `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, EXTRA LIKE '%auto_increment%' FROM information_schema.COLUMNS WHERE `+userSchemas, func(r []string) {
		f.cols[tableColumn{r[0], r[1], strings.ToLower(r[2])}] = true
		f.tables[tableColumn{r[0], r[1], ""}] = true
		if r[3] == "1" {
			autoinc[tableColumn{r[0], r[1], ""}] = r[2]
		}
	})
	if err != nil {
		return nil, err
	}
	var perr error
	err = queryRows(ctx, db, `SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE, IFNULL(AUTO_INCREMENT, 0) FROM information_schema.TABLES
WHERE ((ENGINE = 'InnoDB' AND AUTO_INCREMENT > 1) OR (ENGINE = 'MEMORY' AND TABLE_ROWS > 0)) AND `+userSchemas+`
ORDER BY TABLE_SCHEMA, TABLE_NAME`, func(r []string) {
		if r[2] == "MEMORY" {
			f.memory = append(f.memory, r[0]+"."+r[1])
			return
		}
		col, ok := autoinc[tableColumn{r[0], r[1], ""}]
		if !ok {
			return
		}
		n, err := strconv.ParseUint(r[3], 10, 64)
		if err != nil && perr == nil {
			perr = fmt.Errorf("AUTO_INCREMENT of %s.%s: %w", r[0], r[1], err)
		}
		f.counters = append(f.counters, capture.AutoIncColumn{Counter: capture.Counter{Schema: r[0], Table: r[1], Next: n}, Column: col})
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// danglingForeignKeys lists the foreign keys whose referenced table or
// column does not exist. A dump loads with FOREIGN_KEY_CHECKS=0, which lets
// InnoDB create such keys silently; every insert into their table then
// fails in the clones. Each is named as schema.table.constraint, with what
// is missing.
func (f *schemaFacts) danglingForeignKeys() []string {
	var out []string
	for _, k := range f.keys {
		if f.cols[tableColumn{k.ref.schema, k.ref.table, strings.ToLower(k.ref.column)}] {
			continue
		}
		missing := fmt.Sprintf("column %s.%s.%s does not exist", k.ref.schema, k.ref.table, k.ref.column)
		if !f.tables[tableColumn{k.ref.schema, k.ref.table, ""}] {
			missing = fmt.Sprintf("table %s.%s does not exist", k.ref.schema, k.ref.table)
		}
		out = append(out, fmt.Sprintf("foreign key %s.%s.%s (%s) references %s.%s(%s), but %s", k.schema, k.table, k.name, k.col, k.ref.schema, k.ref.table, k.ref.column, missing))
	}
	return out
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
func (b *Builder) checkForeignKeys(f *schemaFacts, m *catalog.Meta) {
	for _, k := range f.danglingForeignKeys() {
		w := k + ": inserts into that table fail in every clone (the dump was loaded with FOREIGN_KEY_CHECKS=0, which hid it)"
		m.Warnings = append(m.Warnings, w)
		b.progress("warning: %s", w)
	}
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
		WHERE ENGINE = 'MEMORY' AND TABLE_ROWS > 0 AND `+userSchemas)
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
	return memoryWarning(names)
}

// memoryWarning is memoryRows's warning about the tables names, or "".
func memoryWarning(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("MEMORY tables lose their rows when the server stops, so every clone has %s empty: use InnoDB for rows the tests need", strings.Join(names, ", "))
}
