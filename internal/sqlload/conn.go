package sqlload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"

	"github.com/go-sql-driver/mysql"
)

// A job is one statement on its way to a connection.
type job struct {
	text string
	src  string // source name, for errors
	line int
	db   string // the current database when the statement was read
	size int64  // bytes held in the budget; 0 for session statements
}

// A StatementError is a statement that failed, with where it came from.
type StatementError struct {
	File      string // the source's name
	Line      int    // the line the statement starts on
	Statement string // the start of the statement, on one line
	Err       error  // the server's error
}

func (e *StatementError) Error() string {
	return fmt.Sprintf("%s:%d: %v; statement: %s", e.File, e.Line, e.Err, e.Statement)
}

func (e *StatementError) Unwrap() error { return e.Err }

func stmtError(j job, err error) error {
	return &StatementError{File: j.src, Line: j.line, Statement: excerpt(j.text), Err: err}
}

// conn is one session on the server, with the session statements it still
// has to run before its next statement.
type conn struct {
	c       *sql.Conn
	db      string // the session's default database
	pending []job
	// stale: a database was created or altered since this session entered
	// its default database; enter it again before the next statement.
	stale bool
	// pageCompressed: the server page-compresses new tables by default;
	// uncompressed records the statements run without it (runUncompressed).
	pageCompressed bool
	uncompressed   *uncompressed
}

// run runs a statement after the session statements queued before it, in
// the database that was current when it was read.
func (c *conn) run(ctx context.Context, j job) error {
	for _, p := range c.pending {
		if err := c.exec(ctx, p.text); err != nil {
			return stmtError(p, err)
		}
	}
	c.pending = c.pending[:0]
	if c.stale {
		// USE of the database a session is already in keeps the character
		// set it had: step out first, so the next USE reads it afresh.
		if err := c.exec(ctx, "USE information_schema"); err != nil {
			return stmtError(j, err)
		}
		c.db, c.stale = "information_schema", false
	}
	if j.db != "" && j.db != c.db {
		if err := c.exec(ctx, "USE "+quote.Ident(j.db)); err != nil {
			return stmtError(j, fmt.Errorf("switch to database %s: %w", j.db, err))
		}
		c.db = j.db
	}
	if c.pageCompressed && mariadb.KeepsRowFormat(j.text) {
		return c.runUncompressed(ctx, j)
	}
	if err := c.exec(ctx, j.text); err != nil {
		return stmtError(j, err)
	}
	return nil
}

// runUncompressed runs a statement that names a row format InnoDB does not
// page compress, on a server that page-compresses new tables by default
// (innodb_compression_default=ON, template build --innodb-compression),
// with that default off for it alone: the table keeps the row format its
// definition names, uncompressed, and the load says so.
func (c *conn) runUncompressed(ctx context.Context, j job) error {
	if err := c.exec(ctx, "SET SESSION innodb_compression_default=OFF"); err != nil {
		return stmtError(j, err)
	}
	err := c.exec(ctx, j.text)
	if rerr := c.exec(ctx, "SET SESSION innodb_compression_default=ON"); err == nil {
		err = rerr
	}
	if err != nil {
		return stmtError(j, err)
	}
	c.uncompressed.add(fmt.Sprintf("%s:%d: %s", j.src, j.line, excerpt(j.text)))
	return nil
}

// uncompressed lists the statements that made tables InnoDB would not
// page compress; the load's connections share it.
type uncompressed struct {
	mu    sync.Mutex
	where []string
}

func (u *uncompressed) add(where string) {
	u.mu.Lock()
	u.where = append(u.where, where)
	u.mu.Unlock()
}

// exec sends a statement over the text protocol (no arguments, so the
// driver sends COM_QUERY). An empty query, which is what a statement of
// comments only amounts to, is not an error.
func (c *conn) exec(ctx context.Context, text string) error {
	_, err := c.c.ExecContext(ctx, text)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1065 { // ER_EMPTY_QUERY
		return nil
	}
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// openConn opens a session prepared for loading: no foreign key or unique
// checks, no binary log when the server keeps one, in database db.
func openConn(ctx context.Context, db *sql.DB, database string, binlog bool) (*conn, error) {
	sc, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	c := &conn{c: sc}
	if err := c.exec(ctx, "SET SESSION foreign_key_checks=0, unique_checks=0"); err != nil {
		sc.Close()
		return nil, fmt.Errorf("prepare session: %w", err)
	}
	// The stock client's connection collation: on MySQL its utf8mb4
	// default (utf8mb4_0900_ai_ci), which views, triggers and routines
	// record, where the driver's handshake names utf8mb4_general_ci.
	// MariaDB has no such variable, and its default is the driver's.
	_ = c.exec(ctx, "SET SESSION collation_connection = @@default_collation_for_utf8mb4")
	if binlog {
		// Needs a privilege a plain user may lack; logging is then only slower.
		_ = c.exec(ctx, "SET SESSION sql_log_bin=0")
	}
	// MariaDB's innodb_compression_default; MySQL has none (false).
	_ = c.c.QueryRowContext(ctx, "SELECT @@session.innodb_compression_default").Scan(&c.pageCompressed)
	if database != "" {
		if err := c.exec(ctx, "USE "+quote.Ident(database)); err != nil {
			sc.Close()
			return nil, fmt.Errorf("use database %s: %w", database, err)
		}
		c.db = database
	}
	return c, nil
}

// currentDB asks the server for the session's default database.
func (c *conn) currentDB(ctx context.Context) (string, error) {
	var db sql.NullString
	if err := c.c.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil {
		return "", fmt.Errorf("read current database: %w", err)
	}
	c.db = db.String
	return db.String, nil
}
