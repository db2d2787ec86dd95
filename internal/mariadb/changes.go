package mariadb

import "strings"

// How each flavour's server shows what its clients wrote: for release
// --unchanged (did anything change?) and the in-place reset (which
// tables' rows changed?). The callers (internal/pool) read these names
// and queries, never the flavour.

// Changes are a flavour's counters of what clients wrote.
type Changes struct {
	// RowWrites are the status variables (upper case) whose sum moves
	// with every row write, whatever the engine, statement, routine or
	// trigger.
	RowWrites []string
	// OtherWrites are the flavour's own counters (upper case) of
	// statements that write without a row (besides the DDL, account,
	// TRUNCATE and plugin statement counters both flavours have).
	OtherWrites []string
	// TableRows lists rows written per table: schema, table, rows
	// written, of them the rows inserted or updated (what can move the
	// table's AUTO_INCREMENT counter; where the server does not tell them
	// apart, the rows written again), and of those the rows inserted
	// (where the server does not tell, -1).
	TableRows string
	// Counting answers one integer, > 0 while TableRows counts every
	// table's writes (the server's setting or instrumentation is on).
	Counting string
	// NotCounting says, for a server where Counting answers 0, why its
	// slots reset fully.
	NotCounting string
	// Lost are the status variables (upper case) that move when TableRows
	// missed a table (an instrumentation table full): a change since the
	// baseline resets fully.
	Lost []string
	// Setup is run by the administrator once a server is up, so that
	// TableRows counts the rows of the system schema (mysql) too; "" for
	// none.
	Setup string
	// TempTables is the information_schema table that lists every
	// session's temporary tables, when the server has one (MariaDB 11.2
	// and later: TEMPORARY_TABLES; MySQL: InnoDB's, INNODB_TEMP_TABLE_INFO).
	TempTables string
	// ImportKeepsCounter says the server's IMPORT TABLESPACE keeps the
	// table's own AUTO_INCREMENT counter, which the holder's inserts
	// moved, rather than the imported file's (MySQL persists the counter apart from the
	// tablespace): the restore then sets it back to the template's,
	// unless the table's rows were only deleted (TableRows).
	ImportKeepsCounter bool
	// DeleteAdded says the rows a holder added to an InnoDB table are
	// deleted rather than the table imported, when they are few: in a
	// table the template has empty, all of them; in one whose rows the
	// holder only inserted, those from the template's AUTO_INCREMENT
	// counter on, the table then counted (exportmeta.Facts.Counted; the
	// table is imported when the count is not the template's). Its counter
	// is set back as after an import. On MySQL DISCARD and IMPORT
	// TABLESPACE cost about 10 ms more server CPU than a DELETE of a few
	// rows and the counter's ALTER TABLE; on MariaDB the two cost the
	// same, and the import sets the counter too (docs/benchmarks.md).
	DeleteAdded bool
	// WriteBack says the rows a holder wrote to a small InnoDB table with
	// a primary key are written back from the template's rows, which the
	// pool reads once from the table imported, rather than the table
	// imported again: the rows that differ from the template's deleted,
	// the template's missing inserted, the table's checksum then compared
	// with the template's. On MySQL that costs a fraction of the import
	// (docs/benchmarks.md); MariaDB's import is cheap.
	WriteBack bool
	// PurgeWake, when not "", wakes InnoDB's purge at once, where it
	// otherwise wakes once a second: the flavour's write mark holds the log
	// sequence number (RowWrites), which the purge of a restore's undo logs
	// moves. It then waits on the server, in 100 ms sleeps, until the
	// history list is empty, at most a second: it runs on a connection of
	// its own.
	PurgeWake string
	// HistoryStatus is the status variable (upper case) of InnoDB's
	// history list length, the undo logs the purge has yet to remove;
	// read with LSNStatus, it says when the purge is done.
	HistoryStatus string
}

// mysqlRowWrites are MySQL's row write counters: neither its log
// sequence number nor its row counters hold still (the LSN moves on its
// own for a few seconds after the server starts and after account
// statements, InnoDB's purge of the grant tables' undo; Handler_* and
// Innodb_rows_* count internal temporary tables, which pristine's own
// SHOW and processlist queries write). The statements that write are
// counted instead: INSERT, UPDATE, DELETE, REPLACE (their multi-table
// and SELECT forms), LOAD DATA and CALL, which MySQL counts also when a
// stored function, procedure or trigger runs them, whatever engine they
// write to and whether or not they changed a row.
var mysqlRowWrites = []string{"COM_INSERT", "COM_INSERT_SELECT", "COM_UPDATE", "COM_UPDATE_MULTI", "COM_DELETE",
	"COM_DELETE_MULTI", "COM_REPLACE", "COM_REPLACE_SELECT", "COM_LOAD", "COM_CALL_PROCEDURE"}

// Changes are the flavour's counters of what clients wrote.
//
// MariaDB: the InnoDB log sequence number and Handler_write, _update,
// _delete (every engine's row writes, internal temporary tables left out)
// move with every write; per table, the user statistics (userstat, on
// in every slot: information_schema.TABLE_STATISTICS.ROWS_CHANGED); the
// purge is woken by a SET (PurgeWake).
//
// MySQL: the write statements' counters (mysqlRowWrites); per table,
// the performance schema's table I/O (table_io_waits_summary_by_table.
// COUNT_WRITE: every row a handler writes, updates or deletes, whether or
// not the write succeeds; COUNT_INSERT and COUNT_UPDATE of them), which
// slots run with nothing else instrumented (InPlaceArgs). Its tables
// have a fixed number of table and handle instances; the *_LOST counters
// (and the per-index statistics a closed handle's counts go to) say when
// one was missed.
func (f Flavor) Changes() Changes {
	if f == MySQL {
		return Changes{
			RowWrites:   mysqlRowWrites,
			OtherWrites: []string{"COM_INSTALL_COMPONENT", "COM_UNINSTALL_COMPONENT", "COM_IMPORT"},
			TableRows:   "SELECT OBJECT_SCHEMA, OBJECT_NAME, COUNT_WRITE, COUNT_INSERT + COUNT_UPDATE, COUNT_INSERT FROM performance_schema.table_io_waits_summary_by_table WHERE OBJECT_TYPE = 'TABLE'",
			// Every table is counted while the consumer and the instrument
			// are on, the catch-all TABLE object is enabled and no other
			// TABLE object is disabled (but the server's own schemas').
			Counting: "SELECT (SELECT COUNT(*) FROM performance_schema.setup_consumers WHERE NAME = 'global_instrumentation' AND ENABLED = 'YES')" +
				" * (SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME = 'wait/io/table/sql/handler' AND ENABLED = 'YES')" +
				" * (SELECT COUNT(*) FROM performance_schema.setup_objects WHERE OBJECT_TYPE = 'TABLE' AND OBJECT_SCHEMA = '%' AND OBJECT_NAME = '%' AND ENABLED = 'YES')" +
				" * (SELECT COUNT(*) = 0 FROM performance_schema.setup_objects WHERE OBJECT_TYPE = 'TABLE' AND ENABLED <> 'YES' AND OBJECT_SCHEMA NOT IN ('performance_schema', 'information_schema'))",
			NotCounting: "the server's performance schema does not count every table's row writes (performance_schema, its wait/io/table/sql/handler instrument, global_instrumentation consumer and TABLE objects)",
			Lost:        []string{"PERFORMANCE_SCHEMA_TABLE_HANDLES_LOST", "PERFORMANCE_SCHEMA_TABLE_INSTANCES_LOST", "PERFORMANCE_SCHEMA_INDEX_STAT_LOST"},
			Setup:       "UPDATE performance_schema.setup_objects SET ENABLED = 'YES' WHERE OBJECT_TYPE = 'TABLE' AND OBJECT_SCHEMA = 'mysql'",
			TempTables:  "INNODB_TEMP_TABLE_INFO",

			ImportKeepsCounter: true,
			DeleteAdded:        true,
			WriteBack:          true,
		}
	}
	return Changes{
		RowWrites:   []string{MariaDB.LSNStatus(), "HANDLER_WRITE", "HANDLER_UPDATE", "HANDLER_DELETE"},
		TableRows:   "SELECT TABLE_SCHEMA, TABLE_NAME, ROWS_CHANGED, ROWS_CHANGED, -1 FROM information_schema.TABLE_STATISTICS",
		Counting:    "SELECT @@GLOBAL.userstat + 0",
		NotCounting: "the server's user statistics (userstat) are off",
		TempTables:  "TEMPORARY_TABLES",
		// innodb_max_purge_lag_wait's update wakes the purge and sleeps
		// until the history list is no longer than the value; it stores
		// nothing (the variable reads 4294967295 after it), so the global
		// variables' hash does not see it.
		PurgeWake:     "SET STATEMENT max_statement_time = 1 FOR SET GLOBAL innodb_max_purge_lag_wait = 0",
		HistoryStatus: "INNODB_HISTORY_LIST_LENGTH",
	}
}

// InPlaceArgs are the server options a slot gets for its in-place
// reset's per-table counters, unless the user's own server options
// (userOptions, without "--") turn the facility on or off themselves
// (userstat, performance_schema), which then stays as the user has it:
// the reset checks Changes.Counting.
//
// MariaDB: userstat. MySQL: the performance schema with table I/O alone:
// every other instrument, consumer and history off, and the fixed-size
// buffers that would hold them at 0. Measured on MySQL 9.7 (2 cores):
// about 10 MiB more resident memory than with the performance schema off
// and no start CPU beyond the noise, against about 240 MiB and 0.25 s
// for its defaults. Instrument classes are left at their defaults: with
// no thread classes no table I/O is counted. The index statistics stay
// sized by the server: a closed table handle's counts are kept there,
// and with none they are lost (Performance_schema_index_stat_lost) as
// soon as the table leaves the table cache.
func (f Flavor) InPlaceArgs(userOptions []string) []string {
	facility, args := "userstat", []string{"--loose-userstat=1"}
	if f == MySQL {
		facility = "performance-schema"
		args = []string{"--performance-schema=ON", "--performance-schema-instrument=%=OFF",
			"--performance-schema-instrument=wait/io/table/sql/handler=ON"}
		for _, c := range []string{"events-statements-current", "events-transactions-current", "statements-digest", "thread-instrumentation"} {
			args = append(args, "--performance-schema-consumer-"+c+"=OFF")
		}
		for _, s := range []string{"digests-size", "error-size", "max-digest-length", "max-sql-text-length",
			"session-connect-attrs-size", "accounts-size", "hosts-size", "users-size", "setup-actors-size",
			"max-memory-classes", "max-mutex-classes", "max-rwlock-classes", "max-cond-classes", "max-file-classes",
			"max-socket-classes", "max-stage-classes", "max-statement-classes", "max-metadata-locks",
			"max-prepared-statements-instances", "max-program-instances", "max-table-lock-stat"} {
			args = append(args, "--performance-schema-"+s+"=0")
		}
		for _, e := range []string{"stages", "statements", "transactions", "waits"} {
			args = append(args, "--performance-schema-events-"+e+"-history-size=0", "--performance-schema-events-"+e+"-history-long-size=0")
		}
	}
	for _, o := range userOptions {
		name, _, _ := strings.Cut(strings.ReplaceAll(strings.ToLower(o), "_", "-"), "=")
		for _, p := range []string{"loose-", "skip-", "enable-", "disable-"} {
			name = strings.TrimPrefix(name, p)
		}
		if name == facility {
			return nil
		}
	}
	return args
}
