// Package demo generates the bundled demo schema: 51 InnoDB tables of a
// shop, about 110 MB of data and indexes at scale 1, with 1 to 4 secondary
// indexes per table and foreign keys between tables. The SQL is a few tens
// of kilobytes: rows come from MariaDB's sequence engine (seq_1_to_N), or
// on MySQL from a helper table of numbers, so loading is fast and the data
// is the same on every run.
package demo

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Options shape the demo schema.
type Options struct {
	// Scale multiplies every table's row count (default 1; the benchmarks
	// also use 10).
	Scale float64
	// Tables is the number of tables (default 51). Fewer take a prefix of
	// the schema; more repeat it in copies named name_1, name_2, ... with
	// rows spread so the total row count stays that of 51 tables, which
	// makes many small tables. Foreign keys stay within a copy, so their
	// chains stay short.
	Tables int
	// MySQL writes the schema in MySQL's dialect: rows are numbered from
	// a helper table (_pristine_seq, made first and dropped at the end)
	// instead of MariaDB's sequence engine (seq_1_to_N), and hashes come
	// from SHA2 (MySQL 9 has no MD5 nor SHA1).
	MySQL bool
}

// md5Call and sha1Call find the hash calls MySQL 9 no longer has.
var (
	md5Call  = regexp.MustCompile(`MD5\(([^()]*)\)`)
	sha1Call = regexp.MustCompile(`SHA1\(([^()]*)\)`)
)

// seqTable is the helper table of Options.MySQL.
const seqTable = "_pristine_seq"

// DefaultTables is the table count of the demo schema.
const DefaultTables = 51

// maxChunk bounds the rows one INSERT adds, to keep transactions modest.
const maxChunk = 100000

// Write writes the demo schema's SQL to w. It creates tables in the current
// database and uses no database statement.
func Write(w io.Writer, opt Options) error {
	if opt.Scale == 0 {
		opt.Scale = 1
	}
	if opt.Tables == 0 {
		opt.Tables = DefaultTables
	}
	if opt.Scale < 0 || math.IsNaN(opt.Scale) || math.IsInf(opt.Scale, 0) || opt.Tables < 0 {
		return fmt.Errorf("demo schema: scale must be positive and tables at least 1")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "-- pristine demo schema: %d tables, scale %g\n", opt.Tables, opt.Scale)
	bw.WriteString("SET foreign_key_checks = 0, unique_checks = 0;\n")
	tables := Tables(opt)
	if opt.MySQL {
		most := 1
		for _, t := range tables {
			most = max(most, t.Rows)
		}
		digits := len(strconv.Itoa(most))
		var from, sum []string
		for i := 0; i < digits; i++ {
			from = append(from, fmt.Sprintf("(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) d%d", i))
			sum = append(sum, fmt.Sprintf("d%d.d * %d", i, int(math.Pow10(i))))
		}
		fmt.Fprintf(bw, "CREATE TABLE `%s` (seq INT UNSIGNED NOT NULL PRIMARY KEY) ENGINE=InnoDB;\n", seqTable)
		fmt.Fprintf(bw, "INSERT INTO `%s` SELECT 1 + %s FROM %s WHERE %s < %d;\n", seqTable, strings.Join(sum, " + "), strings.Join(from, " CROSS JOIN "), strings.Join(sum, " + "), most)
	}
	for _, t := range tables {
		t.write(bw, opt.MySQL)
	}
	if opt.MySQL {
		fmt.Fprintf(bw, "DROP TABLE `%s`;\n", seqTable)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write demo schema: %w", err)
	}
	return nil
}

// A Table is one table of the generated schema.
type Table struct {
	Name    string
	Rows    int
	Parents []string // referenced tables, in the order of the foreign key columns
	spec    spec
	salt    int
	prows   []int // row counts of the parents
}

// Tables returns the tables Write creates, in creation order.
func Tables(opt Options) []Table {
	if opt.Scale == 0 {
		opt.Scale = 1
	}
	if opt.Tables == 0 {
		opt.Tables = DefaultTables
	}
	shrink := 1.0
	if opt.Tables > len(specs) {
		shrink = float64(len(specs)) / float64(opt.Tables)
	}
	rows := map[string]int{}
	out := make([]Table, 0, opt.Tables)
	for i := range opt.Tables {
		s, copyN := specs[i%len(specs)], i/len(specs)
		t := Table{Name: copyName(s.name, copyN), spec: s, salt: i}
		t.Rows = max(1, int(math.Round(float64(s.rows)*opt.Scale*shrink)))
		for _, p := range s.parents {
			pn := copyName(p, copyN)
			t.Parents = append(t.Parents, pn)
			t.prows = append(t.prows, rows[pn])
		}
		rows[t.Name] = t.Rows
		out = append(out, t)
	}
	return out
}

func copyName(name string, n int) string {
	if n == 0 {
		return name
	}
	return fmt.Sprintf("%s_%d", name, n)
}

// fkColumn names the column that references table parent (a copy's suffix
// dropped): orders -> order_id, categories -> category_id.
func fkColumn(parent string) string {
	if i := strings.LastIndexByte(parent, '_'); i > 0 && strings.Trim(parent[i+1:], "0123456789") == "" {
		parent = parent[:i]
	}
	switch {
	case strings.HasSuffix(parent, "ies"):
		parent = strings.TrimSuffix(parent, "ies") + "y"
	case strings.HasSuffix(parent, "sses"):
		parent = strings.TrimSuffix(parent, "es")
	default:
		parent = strings.TrimSuffix(parent, "s")
	}
	return parent + "_id"
}

// write writes the table's CREATE TABLE and INSERT statements.
func (t Table) write(w *bufio.Writer, mysql bool) {
	var defs, names, exprs []string
	defs = append(defs, "`id` INT UNSIGNED NOT NULL")
	names = append(names, "`id`")
	exprs = append(exprs, "seq")
	var fks []string
	for i, p := range t.Parents {
		col := fkColumn(p)
		null := "NOT NULL"
		expr := fmt.Sprintf("1 + (seq * %d + %d) %% %d", 7919+2*i, t.salt, max(1, t.prows[i]))
		if i > 0 { // later references are optional, as in real schemas
			null = "NULL"
			expr = fmt.Sprintf("IF(seq %% %d = 0, NULL, %s)", 7+i, expr)
		}
		defs = append(defs, fmt.Sprintf("`%s` INT UNSIGNED %s", col, null))
		names = append(names, "`"+col+"`")
		exprs = append(exprs, expr)
		fks = append(fks, fmt.Sprintf("FOREIGN KEY (`%s`) REFERENCES `%s` (`id`)", col, p))
	}
	prefix := strings.ToUpper(t.spec.name[:3])
	for i := 0; i < len(t.spec.shape); i++ {
		c := columns[t.spec.shape[i]]
		defs = append(defs, fmt.Sprintf("`%s` %s", c.name, c.def))
		names = append(names, "`"+c.name+"`")
		exprs = append(exprs, strings.NewReplacer("{P}", prefix, "{K}", strconv.Itoa(t.salt)).Replace(c.expr))
	}
	defs = append(defs, "PRIMARY KEY (`id`)")
	defs = append(defs, t.indexes()...)
	defs = append(defs, fks...)

	fmt.Fprintf(w, "\nCREATE TABLE `%s` (\n  %s\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n", t.Name, strings.Join(defs, ",\n  "))
	if mysql {
		for i, e := range exprs {
			e = md5Call.ReplaceAllString(e, "LEFT(SHA2($1, 256), 32)")
			exprs[i] = sha1Call.ReplaceAllString(e, "LEFT(SHA2($1, 256), 40)")
		}
	}
	cols, sel := strings.Join(names, ", "), strings.Join(exprs, ",\n  ")
	for lo := 1; lo <= t.Rows; lo += maxChunk {
		hi := min(t.Rows, lo+maxChunk-1)
		if mysql {
			fmt.Fprintf(w, "INSERT INTO `%s` (%s)\nSELECT\n  %s\nFROM `%s` WHERE seq BETWEEN %d AND %d;\n", t.Name, cols, sel, seqTable, lo, hi)
			continue
		}
		fmt.Fprintf(w, "INSERT INTO `%s` (%s)\nSELECT\n  %s\nFROM seq_%d_to_%d;\n", t.Name, cols, sel, lo, hi)
	}
}

// indexes returns the table's secondary indexes: one per foreign key (which
// InnoDB needs), then unique and composite ones, 1 to 4 in all.
func (t Table) indexes() []string {
	has := func(c byte) bool { return strings.IndexByte(t.spec.shape, c) >= 0 }
	var cand []string
	for i, p := range t.Parents {
		col := fkColumn(p)
		if i == 0 && has('d') {
			cand = append(cand, fmt.Sprintf("KEY `idx_%s` (`%s`, `created_at`)", col, col))
		} else {
			cand = append(cand, fmt.Sprintf("KEY `idx_%s` (`%s`)", col, col))
		}
	}
	if has('c') {
		cand = append(cand, "UNIQUE KEY `uq_code` (`code`)")
	}
	if has('e') {
		cand = append(cand, "UNIQUE KEY `uq_email` (`email`)")
	}
	if has('s') && has('d') {
		cand = append(cand, "KEY `idx_status_created` (`status`, `created_at`)")
	}
	if has('n') {
		cand = append(cand, "KEY `idx_name` (`name`)")
	}
	if has('d') {
		cand = append(cand, "KEY `idx_created` (`created_at`)")
	}
	if has('a') {
		cand = append(cand, "KEY `idx_amount` (`amount`)")
	}
	want := max(1+(t.salt*5+2)%4, len(t.Parents))
	return cand[:min(want, len(cand), 4)]
}
