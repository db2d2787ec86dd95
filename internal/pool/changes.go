package pool

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/exportmeta"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// This file finds what a holder changed, for the in-place reset
// (inplace.go): which tables' rows, and whether anything else moved.
//
// Rows are counted per table by MariaDB's user statistics (the userstat
// server option, on in every slot server: information_schema.
// TABLE_STATISTICS.ROWS_CHANGED), which every engine's row writes,
// updates and deletes move through the handler, from a statement, a
// trigger, a routine or an event alike. InnoDB's own per-table counter
// (INNODB_SYS_TABLESTATS.MODIFIED_COUNTER) is not used: it goes back to 0
// whenever the table's statistics are recalculated, so a table written
// enough to trigger a recalculation would look untouched. Rows InnoDB
// changes on its own (ON DELETE/UPDATE CASCADE and SET NULL) do not pass
// the handler: every table a changed table's foreign keys reach that way
// is counted as changed too (cascadeClosure).

// inplaceBase is what a slot looked like when it became ready, for the
// in-place reset: nil when the slot cannot be reset in place (ineligible
// says why).
type inplaceBase struct {
	// other sums the write counters that are not row writes: every
	// COM_CREATE_, _DROP_, _ALTER_, _RENAME_ (but temporary tables'),
	// TRUNCATE, GRANT, REVOKE, plugin, and table maintenance
	// (OPTIMIZE, REPAIR, ANALYZE, CHECK) statement.
	other int64
	// globals hashes the global variables (globalsHash).
	globals string
	// sets is the server's count of SET statements (COM_SET_OPTION) when
	// globals was valid, -1 when not read: while it holds, no statement
	// can have set a global variable and the hash need not be read again.
	sets int64
	// lost sums the counters of per-table counts missed
	// (mariadb.Changes.Lost; MySQL's performance schema).
	lost int64
	// rows is the rows written per table ("db\x00table";
	// mariadb.Changes.TableRows).
	rows map[string]tableCount
	// ineligible, when set, says why the slot's template cannot be reset
	// in place (the slot resets fully).
	ineligible string
	// children are the tables each table's cascading foreign keys reach
	// (cascadeClosure); the template's, read once: foreign keys change
	// only by DDL, which resets fully.
	children map[tableRef][]tableRef
	// counters are the template's AUTO_INCREMENT counters of its InnoDB
	// tables, read once like children, where an import keeps a table's
	// own (mariadb.Changes.ImportKeepsCounter); nil elsewhere.
	counters map[tableRef]uint64
	// counted are the template's InnoDB tables whose added rows a reset
	// deletes (exportmeta.Facts.Counted), read once like children, where
	// the flavour does (mariadb.Changes.DeleteAdded); nil elsewhere.
	counted map[tableRef]exportmeta.Counted
}

// maintenanceCounters are statements that rewrite a table without
// counting rows, counted with the non-row writes.
var maintenanceCounters = []string{"COM_OPTIMIZE", "COM_REPAIR", "COM_ANALYZE", "COM_CHECK", "COM_PRELOAD_KEYS"}

// isOtherCounter tells whether a status variable (upper case) counts a
// write that is not a row write on a server of flavour f: a write counter
// (isWriteCounter) but the flavour's row write counters, or a table
// maintenance statement.
func isOtherCounter(name string, f mariadb.Flavor) bool {
	if slices.Contains(f.Changes().RowWrites, name) {
		return false
	}
	return slices.Contains(maintenanceCounters, name) || isWriteCounter(name, f)
}

// sumOther sums the non-row write counters of a SHOW STATUS map.
func sumOther(status map[string]string, f mariadb.Flavor) (int64, error) {
	return sumWhere(status, func(name string) bool { return isOtherCounter(name, f) })
}

// lostCount sums the counters of per-table counts missed
// (mariadb.Changes.Lost) of a SHOW STATUS map.
func lostCount(status map[string]string, f mariadb.Flavor) (int64, error) {
	return sumWhere(status, func(name string) bool { return slices.Contains(f.Changes().Lost, name) })
}

// sumWhere sums the counters of status whose names pick.
func sumWhere(status map[string]string, pick func(name string) bool) (int64, error) {
	var sum int64
	for name, value := range status {
		if !pick(name) {
			continue
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read write counters: %s=%q is not a count", name, value)
		}
		sum += n
	}
	return sum, nil
}

// setCount is COM_SET_OPTION of a SHOW STATUS map, -1 when it is not
// there. Every SET statement counts, whoever runs it and however (a
// prepared statement, a routine, SET GLOBAL, SET @@global., SET
// PASSWORD): only SET and the plugin statements (counted with the other
// writes) change a global variable.
func setCount(status map[string]string) int64 {
	n, err := strconv.ParseInt(status["COM_SET_OPTION"], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// templateBases holds, per pool directory, the base of the pool's first
// fresh slot: what only DDL changes (sequences, foreign keys) is the
// template's, the same in every fresh slot, and reading it opens every
// table (information_schema.TABLES and REFERENTIAL_CONSTRAINTS), tens of
// milliseconds of server CPU a full reset need not pay again.
var templateBases sync.Map

// bootBase is the base of a slot's freshly booted server, whose write
// mark (with the global variables' hash) and counters (readCounters) were
// just read. The first fresh slot of a pool takes what only DDL changes
// from the template's facts, which its build read (exportmeta.Facts;
// facts returns nil for a template without them), else from its server.
func bootBase(ctx context.Context, admin querier, f mariadb.Flavor, s *slot, mark string, status map[string]string, facts func() *exportmeta.Facts) (*inplaceBase, error) {
	key := filepath.Dir(s.dir)
	fresh := len(s.restore) == 0
	var prev *inplaceBase
	v, cached := templateBases.Load(key)
	switch {
	case !fresh:
	case cached:
		prev = v.(*inplaceBase)
	case facts != nil:
		if ft := facts(); ft != nil {
			if why := notCounting(ctx, admin, f); why != "" {
				prev = &inplaceBase{ineligible: why}
			} else {
				prev = baseOfFacts(ft, f)
			}
		}
	}
	globals := markGlobals(mark)
	b, err := baseFrom(ctx, admin, f, prev, status, globals)
	if err != nil {
		return nil, err
	}
	if fresh && !cached {
		templateBases.Store(key, b)
	}
	return b, nil
}

// inplaceSetup readies a freshly started server of flavour f for its
// in-place baseline (mariadb.Changes.Setup: on MySQL, the performance
// schema counts the mysql schema's rows too). It runs before the write
// mark is read: it is a write of its own.
func inplaceSetup(ctx context.Context, admin querier, f mariadb.Flavor) error {
	if q := f.Changes().Setup; q != "" {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("ready the per-table write counters: %w", err)
		}
	}
	return nil
}

// baseFrom is a ready slot's in-place baseline, from its counters
// (readCounters) and the global variables' hash (globalsHash). A server
// that cannot be reset in place (no per-table row counters on, a template
// with sequences) gets a base with ineligible set; an error is a failed
// query. With prev, the base of the same server before, what only DDL
// changes (sequences, foreign keys) is taken from it.
func baseFrom(ctx context.Context, admin querier, f mariadb.Flavor, prev *inplaceBase, status map[string]string, globals string) (*inplaceBase, error) {
	b, err := (&inplaceBase{}).again(status, globals, f)
	if err != nil {
		return nil, err
	}
	if prev == nil || (prev.ineligible == "" && prev.children == nil) {
		if why := notCounting(ctx, admin, f); why != "" {
			b.ineligible = why
			return b, nil
		}
		ft, err := exportmeta.ReadFacts(ctx, admin, f)
		if err != nil {
			return nil, fmt.Errorf("in-place baseline: %w", err)
		}
		if prev = baseOfFacts(ft, f); prev == nil {
			return nil, errors.New("in-place baseline: no AUTO_INCREMENT counters read")
		}
	}
	if b.ineligible = prev.ineligible; b.ineligible != "" {
		return b, nil
	}
	b.children, b.counters, b.counted = prev.children, prev.counters, prev.counted
	if b.rows, err = tableRows(ctx, admin, f); err != nil {
		return nil, err
	}
	return b, nil
}

// again is b with the statement counters of status (SHOW STATUS of a
// server of flavour f) and the global variables' hash globals: the next
// base of a reset that found no row written, whose per-table counters
// are b's still.
func (b *inplaceBase) again(status map[string]string, globals string, f mariadb.Flavor) (*inplaceBase, error) {
	other, err := sumOther(status, f)
	if err != nil {
		return nil, err
	}
	lost, err := lostCount(status, f)
	if err != nil {
		return nil, err
	}
	n := *b
	n.other, n.lost, n.globals, n.sets = other, lost, globals, setCount(status)
	return &n, nil
}

// baseOfFacts is the part of a base that only DDL changes, from the
// template's facts: why it cannot be reset in place, or the tables each
// table's cascading foreign keys reach and, where flavour f's import
// keeps a table's own counter, the AUTO_INCREMENT counters. It is nil
// when ft lacks the counters f needs.
func baseOfFacts(ft *exportmeta.Facts, f mariadb.Flavor) *inplaceBase {
	// NEXTVAL writes a sequence without counting a row: a template with
	// sequences resets fully.
	if ft.Sequences > 0 {
		return &inplaceBase{ineligible: fmt.Sprintf("the template has %d sequence(s), whose NEXTVAL no row counter sees", ft.Sequences)}
	}
	b := &inplaceBase{children: map[tableRef][]tableRef{}}
	for _, c := range ft.Cascades {
		p := tableRef{c.Parent.DB, c.Parent.Name}
		b.children[p] = append(b.children[p], tableRef{c.Child.DB, c.Child.Name})
	}
	if f.Changes().ImportKeepsCounter {
		if ft.Counters == nil {
			return nil
		}
		b.counters = make(map[tableRef]uint64, len(ft.Counters))
		for _, c := range ft.Counters {
			b.counters[tableRef{c.Table.DB, c.Table.Name}] = c.Next
		}
	}
	if f.Changes().DeleteAdded && len(ft.Counted) > 0 {
		b.counted = make(map[tableRef]exportmeta.Counted, len(ft.Counted))
		for _, c := range ft.Counted {
			b.counted[tableRef{c.Table.DB, c.Table.Name}] = c
		}
	}
	return b
}

// notCounting says why a server of flavour f does not count every
// table's row writes (mariadb.Changes.Counting), "" when it does.
func notCounting(ctx context.Context, admin querier, f mariadb.Flavor) string {
	c := f.Changes()
	var on int64
	if err := admin.QueryRowContext(ctx, c.Counting).Scan(&on); err != nil {
		return c.NotCounting + ": " + err.Error()
	}
	if on <= 0 {
		return c.NotCounting
	}
	return ""
}

// tableCount is one table's row counters (mariadb.Changes.TableRows):
// the rows written, of them those inserted or updated, and of those the
// rows inserted.
type tableCount struct{ written, grown, inserted int64 }

// tableRows reads the rows written per table (mariadb.Changes.TableRows),
// by "db\x00table".
func tableRows(ctx context.Context, conn querier, f mariadb.Flavor) (map[string]tableCount, error) {
	rows, err := conn.QueryContext(ctx, f.Changes().TableRows)
	if err != nil {
		return nil, fmt.Errorf("read per-table row counters: %w", err)
	}
	defer rows.Close()
	out := map[string]tableCount{}
	for rows.Next() {
		var db, t string
		var n tableCount
		if err := rows.Scan(&db, &t, &n.written, &n.grown, &n.inserted); err != nil {
			return nil, fmt.Errorf("read per-table row counters: %w", err)
		}
		out[db+"\x00"+t] = n
	}
	return out, rows.Err()
}

// tableRef is one table, by schema and name.
type tableRef struct{ db, name string }

func (t tableRef) String() string { return "`" + t.db + "`.`" + t.name + "`" }

// systemSchema reports whether db is one of the server's own schemas,
// which no in-place reset restores.
func systemSchema(db string) bool {
	switch strings.ToLower(db) {
	case "mysql", "sys", "performance_schema", "information_schema":
		return true
	}
	return false
}

// errNotInPlace wraps every reason a slot is reset fully instead of in
// place; the text after it is the reason's label (fallbackReason).
var errNotInPlace = errors.New("not restorable in place")

// notInPlace makes an errNotInPlace with a reason label and a detail.
func notInPlace(reason, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", errNotInPlace, reason, fmt.Sprintf(format, args...))
}

// The reasons an in-place reset falls back to the full reset, as counted
// in Stats.ResetPaths ("full:<reason>").
const (
	FallbackIneligible = "ineligible"   // the template or server cannot be reset in place
	FallbackOff        = "off"          // turned off (PRISTINE_INPLACE_RESET=off)
	FallbackDDL        = "ddl"          // DDL, account, routine, event, TRUNCATE or maintenance statement
	FallbackGlobals    = "globals"      // a global variable changed
	FallbackFiles      = "files"        // a file appeared, went or changed outside the engines' own
	FallbackXA         = "xa"           // a prepared XA transaction outlived its connection
	FallbackTemp       = "temporary"    // a temporary table outlived its connection
	FallbackSystem     = "system_table" // a row of the server's own schemas changed
	FallbackUncounted  = "uncounted"    // the per-table row counters stopped counting, or missed a table
	FallbackEngine     = "engine"       // a changed table's engine or shape cannot be restored in place
	FallbackSessions   = "sessions"     // the holder's connections did not end
	FallbackError      = "error"        // a query or file copy failed (the server lost, ...)
	FallbackProcess    = "process"      // a process other than the server runs in the slot's cgroup
)

// fallbackReason is the reason label of an in-place reset's error.
func fallbackReason(err error) string {
	if !errors.Is(err, errNotInPlace) {
		return FallbackError
	}
	_, rest, _ := strings.Cut(err.Error(), errNotInPlace.Error()+": ")
	reason, _, _ := strings.Cut(rest, ":")
	return reason
}

// serverWritten are the tables of the mysql schema whose rows change
// without a holder's row write, which the reset leaves out of the
// changed rows (a lease has no privilege on the mysql schema): the
// accounts (MariaDB's global_priv, MySQL's user), which only account
// statements write (the reset's own lock of the lease account, and the
// holder's, which the non-row counters see), and MySQL's gtid_executed,
// which the server writes on its own.
var serverWritten = []string{"global_priv", "user", "gtid_executed"}

// tableWrites are what the counters saw of a changed table's rows.
type tableWrites struct {
	// rows is how many rows were written (inserted, updated or deleted):
	// at most that many rows were added.
	rows int64
	// deleted says the rows were only deleted: the table's AUTO_INCREMENT
	// counter is as it was.
	deleted bool
	// inserted says the rows were only inserted: the template's rows are
	// all there as they were (but those a cascade changed).
	inserted bool
}

// changedTables lists the tables whose rows changed from base to now
// (per-table counters), the tables their cascading foreign keys reach
// added, with what was written to each that the counters saw (a table
// reached only by a cascade has none). A changed row of a system schema
// is an error.
func changedTables(ctx context.Context, conn querier, f mariadb.Flavor, base *inplaceBase) (changed []tableRef, writes map[tableRef]tableWrites, err error) {
	now, err := tableRows(ctx, conn, f)
	if err != nil {
		return nil, nil, err
	}
	set, writes := map[tableRef]bool{}, map[tableRef]tableWrites{}
	for k, n := range now {
		was := base.rows[k]
		if n.written <= was.written {
			continue
		}
		db, name, _ := strings.Cut(k, "\x00")
		if strings.EqualFold(db, "mysql") && slices.Contains(serverWritten, strings.ToLower(name)) {
			continue
		}
		if systemSchema(db) {
			return nil, nil, notInPlace(FallbackSystem, "rows of %s changed", tableRef{db, name})
		}
		set[tableRef{db, name}] = true
		rows := n.written - was.written
		writes[tableRef{db, name}] = tableWrites{rows: rows, deleted: n.grown <= was.grown, inserted: n.inserted-was.inserted == rows}
	}
	if len(set) == 0 {
		return nil, nil, nil
	}
	cascadeClosure(base.children, set)
	out := make([]tableRef, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, writes, nil
}

// cascadeClosure adds to set every table children reaches from a table
// of set, until no more come.
func cascadeClosure(children map[tableRef][]tableRef, set map[tableRef]bool) {
	var todo []tableRef
	for t := range set {
		todo = append(todo, t)
	}
	for len(todo) > 0 {
		t := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, c := range children[t] {
			if !set[c] {
				set[c] = true
				todo = append(todo, c)
			}
		}
	}
}

// plainName matches the schema and table names whose file names are the
// names themselves (the server encodes others, @0020 and the like); a
// changed table with another name resets fully.
var plainName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// tempTables counts the temporary tables of every session where the
// server lists them (mariadb.Changes.TempTables: MariaDB 11.2 and later,
// MySQL's InnoDB ones); 0 where it does not (the server answers that the
// table is unknown, 1109). One plain statement: asking information_schema
// whether the table exists first was a prepared statement of its own and,
// on MySQL, a query of the data dictionary (with XA RECOVER, 1.1-1.5 ms
// of a reset against 0.3 ms now, docs/benchmarks.md).
func tempTables(ctx context.Context, conn querier, f mariadb.Flavor) (int, error) {
	var n int
	err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema."+f.Changes().TempTables).Scan(&n)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1109 {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("count temporary tables: %w", err)
	}
	return n, nil
}

// statusCounters is, per flavour, the SHOW STATUS filter of every read of
// the counters (the release --unchanged check's, the in-place reset's):
// every write counter (isWriteCounter), the maintenance counters,
// COM_SET_OPTION (setCount) and the counters of per-table counts missed
// (lostCount), by name. The server tests the filter before it stores a
// row in the result's temporary table, and the rows stored are the cost:
// about 8 µs each on this project's machine, mostly first touches of the
// table's fresh memory (the slot's malloc settings give large buffers
// back at once). All 170 statement counters cost the server 1.7 ms per
// read, one counter 0.3 ms; the whole of SHOW GLOBAL STATUS (some 600
// rows) overflows the slot's in-memory temporary table into a file.
var statusCounters = filters(countersFilter)

// accountCounters is, per flavour, the SHOW STATUS filter of the session
// reads around the new password of a lease account (recycle): the
// counter of ALTER USER, and the row write counters but
// the log sequence number. A few rows where statusCounters stores about
// a hundred: each read of them cost the server as much as a read of the
// server's.
var accountCounters = filters(func(f mariadb.Flavor) string {
	names := []string{"'COM_ALTER_USER'"}
	for _, n := range f.Changes().RowWrites {
		if n != f.LSNStatus() {
			names = append(names, "'"+n+"'")
		}
	}
	return "WHERE Variable_name IN (" + strings.Join(names, ", ") + ")"
})

// filters is filter of every flavour.
func filters(filter func(mariadb.Flavor) string) map[mariadb.Flavor]string {
	m := map[mariadb.Flavor]string{}
	for _, f := range mariadb.Flavors() {
		m[f] = filter(f)
	}
	return m
}

// countersFilter is statusCounters of flavour f.
func countersFilter(f mariadb.Flavor) string {
	var or []string
	for _, p := range writeCounterPrefixes {
		or = append(or, "Variable_name LIKE '"+strings.ReplaceAll(p, "_", "\\_")+"%'")
	}
	names := append(append(append(writeCounterNames(f), maintenanceCounters...), "COM_SET_OPTION"), f.Changes().Lost...)
	for i, n := range names {
		names[i] = "'" + n + "'"
	}
	return "WHERE " + strings.Join(or, " OR ") + " OR Variable_name IN (" + strings.Join(names, ", ") + ")"
}
