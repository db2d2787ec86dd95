package capture

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
)

// tableRef names a table.
type tableRef struct{ db, name string }

func (t tableRef) quoted() string { return quote.Ident(t.db) + "." + quote.Ident(t.name) }
func (t tableRef) String() string { return t.db + "." + t.name }

// table is a base table or sequence to copy.
type table struct {
	tableRef
	create   string // SHOW CREATE TABLE, as the server gives it
	sequence bool
	rows     int64 // the optimizer's estimate
	bytes    int64 // DATA_LENGTH, for progress
	cols     []column
	// pk is the single integer primary key column, when there is one:
	// big tables are split by ranges of it.
	pk string
}

// column is a stored (not generated) column.
type column struct {
	name string
	bit  bool   // BIT columns travel as numbers
	json bool   // MySQL's JSON columns take text only in a character set
	sel  string // how the column is read: see selectExpr
}

// selectExpr is how a column of a DATA_TYPE is read. Numbers are read as
// text the server makes: the driver would otherwise parse each one into an
// int64 or float64 only for database/sql to format it back (a fifth of
// pristine's CPU time). FLOAT goes through DOUBLE, because the server
// prints a FLOAT with 6 significant digits and the value would not survive
// (mariadb-dump loses it so); BIT as its number.
func selectExpr(name, typ string) string {
	q := quote.Ident(name)
	switch typ {
	case "bit":
		return "CONCAT(CAST(" + q + " AS UNSIGNED))"
	case "float":
		return "CONCAT(CAST(" + q + " AS DOUBLE))"
	case "tinyint", "smallint", "mediumint", "int", "bigint", "double", "year":
		return "CONCAT(" + q + ")"
	}
	return q
}

// listTables lists the base tables and sequences of the databases.
func listTables(ctx context.Context, db *sql.DB, dbs []string) ([]*table, error) {
	var out []*table
	for _, d := range dbs {
		rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME, TABLE_TYPE, COALESCE(TABLE_ROWS,0), COALESCE(DATA_LENGTH,0)
		 FROM information_schema.TABLES WHERE TABLE_SCHEMA=? AND TABLE_TYPE IN ('BASE TABLE','SEQUENCE') ORDER BY TABLE_NAME`, d)
		if err != nil {
			return nil, fmt.Errorf("list tables of %s: %w", d, err)
		}
		for rows.Next() {
			t := &table{tableRef: tableRef{db: d}}
			var typ string
			if err := rows.Scan(&t.name, &typ, &t.rows, &t.bytes); err != nil {
				rows.Close()
				return nil, err
			}
			t.sequence = typ == "SEQUENCE"
			out = append(out, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// describe reads a table's CREATE statement, stored columns and integer
// primary key from db, a server of flavour f.
func describe(ctx context.Context, db *sql.DB, f mariadb.Flavor, t *table) error {
	var name string
	if t.sequence {
		// SHOW CREATE TABLE of a sequence would make one with default
		// start, increment and cache.
		if err := db.QueryRowContext(ctx, "SHOW CREATE SEQUENCE "+t.quoted()).Scan(&name, &t.create); err != nil {
			return fmt.Errorf("show create sequence %s: %w", t, err)
		}
		return nil
	}
	if err := db.QueryRowContext(ctx, "SHOW CREATE TABLE "+t.quoted()).Scan(&name, &t.create); err != nil {
		return fmt.Errorf("show create table %s: %w", t, err)
	}
	rows, err := db.QueryContext(ctx, f.ColumnsQuery(), t.db, t.name)
	if err != nil {
		return fmt.Errorf("columns of %s: %w", t, err)
	}
	defer rows.Close()
	var pkCols []string
	intPK := false
	for rows.Next() {
		var name, typ, key, gen string
		if err := rows.Scan(&name, &typ, &key, &gen); err != nil {
			return err
		}
		if gen == "ALWAYS" {
			continue
		}
		t.cols = append(t.cols, column{name: name, bit: typ == "bit", json: typ == "json", sel: selectExpr(name, typ)})
		if key == "PRI" {
			pkCols = append(pkCols, name)
			intPK = strings.HasSuffix(typ, "int")
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(pkCols) == 1 && intPK {
		// COLUMN_KEY says PRI for a unique key promoted to primary too;
		// check there is a real PRIMARY KEY of that one column.
		if strings.Contains(t.create, "PRIMARY KEY ("+quote.Ident(pkCols[0])+")") {
			t.pk = pkCols[0]
		}
	}
	return nil
}

// sortBySize puts the biggest tables first, so the long copies start early.
func sortBySize(ts []*table) {
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].bytes > ts[j].bytes })
}
