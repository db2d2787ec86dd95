package exportmeta

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/sqlrows"
)

// FactsFile is the file of an export directory that holds the template's
// Facts (JSON), written under a temporary name and renamed when complete.
const FactsFile = "facts.json"

// Table is one table, by schema and name.
type Table struct {
	DB   string `json:"db"`
	Name string `json:"name"`
}

// Cascade is a foreign key of Child on Parent with a cascading action
// (CASCADE, SET NULL, SET DEFAULT): InnoDB changes Child's rows on its
// own when Parent's change.
type Cascade struct {
	Parent Table `json:"parent"`
	Child  Table `json:"child"`
}

// Counted is a table of Facts.Counted.
type Counted struct {
	Table Table `json:"table"`
	// Rows is how many rows it has.
	Rows int64 `json:"rows"`
	// Column is its AUTO_INCREMENT column, "" for none.
	Column string `json:"column,omitempty"`
}

// CountedRows is the most rows a table of Facts.Counted has: the reset
// counts them after its DELETE, which must cost less than the import it
// spares.
const CountedRows = 10000

// Counter is an InnoDB table's AUTO_INCREMENT counter.
type Counter struct {
	Table Table  `json:"table"`
	Next  uint64 `json:"next"`
}

// Facts are what the in-place reset needs of a template's tables that
// only DDL changes: reading them opens every table (information_schema's
// TABLES and REFERENTIAL_CONSTRAINTS), which a template's build has done
// already and a pool's first slot would pay again, decompressing the
// pages it reads on a compressed scratch.
type Facts struct {
	// Sequences counts the sequences outside the system schemas.
	Sequences int `json:"sequences"`
	// Cascades are the cascading foreign keys.
	Cascades []Cascade `json:"cascades"`
	// Counters are the AUTO_INCREMENT counters of the InnoDB tables that
	// have one, outside the system schemas; nil when not read.
	Counters []Counter `json:"counters,omitempty"`
	// Counted are the InnoDB tables the in-place reset may restore by
	// deleting the rows a holder added (mariadb.Changes.DeleteAdded), with
	// their row counts: base tables outside the system schemas, not
	// partitioned, with no trigger (the DELETE would run it) and no
	// FULLTEXT index (whose hidden document ids and list of deleted
	// documents would no longer be the template's), that are empty, or
	// that have an AUTO_INCREMENT column, at most CountedRows rows and no
	// cascading foreign key reaching them (a cascade changes their rows
	// unseen). Nil when not read.
	Counted []Counted `json:"counted,omitempty"`
}

// ReadFacts reads the Facts of the server behind q, of flavour fl: the
// AUTO_INCREMENT counters only where an import keeps a table's own
// (mariadb.Changes.ImportKeepsCounter: they are needed, and readable
// uncached, on MySQL only), the counted tables only where the reset
// deletes the rows a holder added (mariadb.Changes.DeleteAdded).
func ReadFacts(ctx context.Context, q mariadb.Querier, fl mariadb.Flavor) (*Facts, error) {
	f := &Facts{Cascades: []Cascade{}}
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_TYPE='SEQUENCE'").Scan(&f.Sequences); err != nil {
		return nil, fmt.Errorf("count sequences: %w", err)
	}
	var err error
	if f.Cascades, err = cascades(ctx, q); err != nil {
		return nil, err
	}
	if fl.Changes().ImportKeepsCounter {
		if f.Counters, err = autoIncrements(ctx, q); err != nil {
			return nil, err
		}
	}
	if fl.Changes().DeleteAdded {
		if f.Counted, err = countedTables(ctx, q, f.Cascades); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// countedCandidates are the tables Facts.Counted may name, whatever
// their rows, each with its AUTO_INCREMENT column ("" for none).
const countedCandidates = `SELECT t.TABLE_SCHEMA, t.TABLE_NAME, COALESCE((SELECT MIN(c.COLUMN_NAME) FROM information_schema.COLUMNS c
		WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME AND LOWER(c.EXTRA) LIKE '%auto_increment%'), '')
	FROM information_schema.TABLES t
	WHERE t.ENGINE = 'InnoDB' AND t.TABLE_TYPE = 'BASE TABLE'
	AND t.TABLE_SCHEMA NOT IN ('mysql', 'sys', 'performance_schema', 'information_schema')
	AND LOWER(t.CREATE_OPTIONS) NOT LIKE '%partitioned%'
	AND NOT EXISTS (SELECT 1 FROM information_schema.TRIGGERS g WHERE g.EVENT_OBJECT_SCHEMA = t.TABLE_SCHEMA AND g.EVENT_OBJECT_TABLE = t.TABLE_NAME)
	AND NOT EXISTS (SELECT 1 FROM information_schema.STATISTICS s WHERE s.TABLE_SCHEMA = t.TABLE_SCHEMA AND s.TABLE_NAME = t.TABLE_NAME AND s.INDEX_TYPE = 'FULLTEXT')
	ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME`

// countBatch is how many tables one statement of countedTables counts.
const countBatch = 64

// countedTables reads Facts.Counted: the candidates counted, at most
// CountedRows+1 rows each, countBatch tables a statement, and of them
// the empty ones and those with a counter, few enough rows and no
// cascading foreign key reaching them (cs).
func countedTables(ctx context.Context, q mariadb.Querier, cs []Cascade) ([]Counted, error) {
	reached := map[Table]bool{}
	for _, c := range cs {
		reached[c.Child] = true
	}
	var all []Counted
	if err := sqlrows.Each(ctx, q, countedCandidates, "", func(_, row []string) error {
		all = append(all, Counted{Table: Table{DB: row[0], Name: row[1]}, Column: row[2]})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list the tables a reset may count: %w", err)
	}
	out := []Counted{}
	for len(all) > 0 {
		batch := all[:min(countBatch, len(all))]
		all = all[len(batch):]
		parts := make([]string, len(batch))
		for i, t := range batch {
			parts[i] = fmt.Sprintf("SELECT %d, COUNT(*) FROM (SELECT 1 FROM %s.%s LIMIT %d) c%d", i, quote.Ident(t.Table.DB), quote.Ident(t.Table.Name), CountedRows+1, i)
		}
		if err := sqlrows.Each(ctx, q, strings.Join(parts, " UNION ALL "), "", func(_, row []string) error {
			i, err := strconv.Atoi(row[0])
			if err != nil || i < 0 || i >= len(batch) {
				return fmt.Errorf("unexpected answer %q", row[0])
			}
			if batch[i].Rows, err = strconv.ParseInt(row[1], 10, 64); err != nil {
				return fmt.Errorf("unexpected count %q", row[1])
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("count the tables' rows: %w", err)
		}
		for _, t := range batch {
			if t.Rows == 0 || (t.Column != "" && t.Rows <= CountedRows && !reached[t.Table]) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// cascades reads the cascading foreign keys.
func cascades(ctx context.Context, q mariadb.Querier) ([]Cascade, error) {
	rows, err := q.QueryContext(ctx, `SELECT CONSTRAINT_SCHEMA, TABLE_NAME, UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME
		FROM information_schema.REFERENTIAL_CONSTRAINTS
		WHERE DELETE_RULE IN ('CASCADE','SET NULL','SET DEFAULT') OR UPDATE_RULE IN ('CASCADE','SET NULL','SET DEFAULT')
		ORDER BY CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME`)
	if err != nil {
		return nil, fmt.Errorf("read cascading foreign keys: %w", err)
	}
	defer rows.Close()
	out := []Cascade{}
	for rows.Next() {
		var c Cascade
		if err := rows.Scan(&c.Child.DB, &c.Child.Name, &c.Parent.DB, &c.Parent.Name); err != nil {
			return nil, fmt.Errorf("read cascading foreign keys: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cascading foreign keys: %w", err)
	}
	return out, nil
}

// autoIncrements reads the AUTO_INCREMENT counter of every InnoDB table
// that has one, outside the system schemas, as the server holds it now
// (no cached statistics: information_schema_stats_expiry 0 for the
// read, on MySQL, which has it).
func autoIncrements(ctx context.Context, q mariadb.Querier) ([]Counter, error) {
	conn, ok := q.(*sql.Conn)
	if !ok {
		db, isDB := q.(*sql.DB)
		if !isDB {
			return nil, errors.New("read AUTO_INCREMENT counters: no connection")
		}
		c, err := db.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("read AUTO_INCREMENT counters: %w", err)
		}
		defer c.Close()
		conn = c
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION information_schema_stats_expiry = 0"); err != nil {
		return nil, fmt.Errorf("read AUTO_INCREMENT counters: %w", err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE ENGINE = 'InnoDB' AND AUTO_INCREMENT IS NOT NULL AND TABLE_SCHEMA NOT IN ('mysql', 'sys', 'performance_schema', 'information_schema') ORDER BY TABLE_SCHEMA, TABLE_NAME")
	if err != nil {
		return nil, fmt.Errorf("read AUTO_INCREMENT counters: %w", err)
	}
	defer rows.Close()
	out := []Counter{}
	for rows.Next() {
		var c Counter
		if err := rows.Scan(&c.Table.DB, &c.Table.Name, &c.Next); err != nil {
			return nil, fmt.Errorf("read AUTO_INCREMENT counters: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// WriteFacts writes f into dir (made 0700) as its FactsFile, whole or
// not at all.
func WriteFacts(dir string, f *Facts) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+FactsFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, FactsFile)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// LoadFacts reads the FactsFile of dir; nil and no error when there is
// none.
func LoadFacts(dir string) (*Facts, error) {
	b, err := os.ReadFile(filepath.Join(dir, FactsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := &Facts{}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, FactsFile), err)
	}
	if f.Cascades == nil || f.Sequences < 0 {
		return nil, fmt.Errorf("read %s: incomplete", filepath.Join(dir, FactsFile))
	}
	return f, nil
}
