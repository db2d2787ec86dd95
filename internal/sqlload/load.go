// Package sqlload loads SQL text, such as mariadb-dump output, into a running
// server: fast, by running independent tables' statements on parallel
// connections, and with errors that name the file and line of the statement
// that failed.
//
// A Splitter cuts the input into statements the way the mariadb client does.
// Each statement is classified (see classify.go): statements on exactly one
// table run on the connection that owns that table, in input order; session
// statements (SET, COMMIT) run on every connection; everything else waits
// for all earlier statements and runs alone. docs/loading.md has the rules.
package sqlload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pristinedb/pristine/internal/quote"

	"github.com/go-sql-driver/mysql"
)

// Options tune Load.
type Options struct {
	// Database is the default database statements run in; Load creates it
	// if it is missing. Empty means the database of the DSN, if any. Input
	// with its own CREATE DATABASE and USE statements works either way.
	Database string
	// Workers is the number of connections that load tables in parallel
	// (default: the number of CPUs, at least 2 and at most 4; the server is
	// the bottleneck). One more connection runs everything else.
	Workers int
	// ReadAhead bounds the bytes of statements read but not yet run
	// (default 256 MiB).
	ReadAhead int64
	// Progress, if set, is called about five times a second and once at the
	// end with the input bytes read (before decompression) and the
	// statements run so far. It is called from one goroutine at a time.
	Progress func(bytesRead, statements int64)
}

// Stats describe a finished load.
type Stats struct {
	Bytes      int64 // SQL text read, after decompression
	Statements int64 // statements run (session statements once, dropped LOCK TABLES not at all)
	Tables     int   // CREATE TABLE statements run
	// Uncompressed names, as "FILE:LINE: statement", the tables left
	// uncompressed on a server that page-compresses new tables by default
	// (innodb_compression_default=ON): those whose definition names a row
	// format InnoDB does not page compress (COMPACT, REDUNDANT, COMPRESSED,
	// or a KEY_BLOCK_SIZE).
	Uncompressed []string
	Duration     time.Duration
}

// key names a table.
type key struct{ db, table string }

// loader is the state of one Load.
type loader struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	main    *conn // runs barriers, USE and serial-mode statements
	workers []*conn
	queues  []*queue
	load    []atomic.Int64 // bytes queued on each worker and not yet run
	owner   map[key]int
	budget  *budget
	maxPkt  int64
	curDB   string
	serial  bool
	// create is the default database while it has not been created: the
	// input may create it itself, with its own character set and comment.
	create string

	uncompressed    uncompressed
	raw, text, done atomic.Int64
	tables          atomic.Int64
	errOnce         sync.Once
	err             error
}

// Load runs the statements of srcs, in order, against the server at dsn (a
// go-sql-driver/mysql DSN). The first failing statement stops the load; its
// error is a *StatementError that names the source and line. A failed load
// leaves whatever ran before it in place: the caller discards it.
func Load(ctx context.Context, dsn string, srcs []Source, opt Options) (Stats, error) {
	start := time.Now()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return Stats{}, fmt.Errorf("load sql: %w", err)
	}
	if opt.Database == "" {
		opt.Database = cfg.DBName
	}
	if opt.Workers <= 0 {
		opt.Workers = min(4, max(2, runtime.NumCPU()))
	}
	if opt.ReadAhead <= 0 {
		opt.ReadAhead = 256 << 20
	}
	cfg.DBName = ""          // the database may not exist yet
	cfg.MaxAllowedPacket = 0 // use the server's limit
	cfg.InterpolateParams = false
	cfg.MultiStatements = false // a statement is exactly one statement
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return Stats{}, fmt.Errorf("load sql: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l := &loader{ctx: ctx, cancel: cancel, owner: map[key]int{}, budget: newBudget(opt.ReadAhead)}
	if err := l.open(db, opt); err != nil {
		return Stats{}, fmt.Errorf("load sql: %w", err)
	}
	defer l.close()

	var wg sync.WaitGroup
	for i := range l.workers {
		wg.Go(func() { l.work(i) })
	}
	stopProgress := l.progress(opt.Progress)
	err = l.dispatch(srcs)
	for _, q := range l.queues {
		q.close()
	}
	if err != nil {
		l.fail(err)
	}
	wg.Wait()
	stopProgress()
	st := Stats{Bytes: l.text.Load(), Statements: l.done.Load(), Tables: int(l.tables.Load()), Uncompressed: l.uncompressed.where, Duration: time.Since(start)}
	if l.err != nil {
		return st, l.err
	}
	return st, nil
}

// open connects the main connection and the workers.
func (l *loader) open(db *sql.DB, opt Options) error {
	var binlog bool
	var err error
	l.main, err = openConn(l.ctx, db, "", false)
	if err != nil {
		return err
	}
	l.main.uncompressed = &l.uncompressed
	if err := l.main.c.QueryRowContext(l.ctx, "SELECT @@log_bin, @@max_allowed_packet").Scan(&binlog, &l.maxPkt); err != nil {
		return fmt.Errorf("read server settings: %w", err)
	}
	if binlog {
		_ = l.main.exec(l.ctx, "SET SESSION sql_log_bin=0")
	}
	// The default database is made when the first statement needs it,
	// unless the input's own CREATE DATABASE comes first.
	l.curDB, l.create = opt.Database, opt.Database
	l.load = make([]atomic.Int64, opt.Workers)
	for range opt.Workers {
		c, err := openConn(l.ctx, db, "", binlog)
		if err != nil {
			return err
		}
		c.uncompressed = &l.uncompressed
		l.workers = append(l.workers, c)
		l.queues = append(l.queues, newQueue())
	}
	return nil
}

func (l *loader) close() {
	for _, c := range append(l.workers, l.main) {
		if c != nil {
			c.c.Close()
		}
	}
}

// fail records the first error and stops everything else.
func (l *loader) fail(err error) {
	l.errOnce.Do(func() {
		l.err = err
		l.cancel(err)
	})
}

// work runs worker i's queue until it is closed or the load fails.
func (l *loader) work(i int) {
	c, q := l.workers[i], l.queues[i]
	for {
		j, ok := q.pop(l.ctx)
		if !ok {
			return
		}
		if j.size == 0 {
			c.pending = append(c.pending, j)
			continue
		}
		err := c.run(l.ctx, j)
		l.load[i].Add(-j.size)
		l.budget.release(j.size)
		if err != nil {
			l.fail(err)
			return
		}
		l.done.Add(1)
	}
}

// dispatch reads every source and hands each statement to its connection.
func (l *loader) dispatch(srcs []Source) error {
	for _, src := range srcs {
		if err := l.dispatchSource(src); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) dispatchSource(src Source) error {
	rc, err := src.Open()
	if err != nil {
		return fmt.Errorf("open %s: %w", src.Name, err)
	}
	defer rc.Close()
	r, release, err := decompress(countingReader{rc, &l.raw})
	if err != nil {
		return fmt.Errorf("read %s: %w", src.Name, err)
	}
	defer release()
	sp := NewSplitter(countingReader{r, &l.text})
	for {
		if err := l.ctx.Err(); err != nil {
			return context.Cause(l.ctx)
		}
		st, err := sp.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", src.Name, err)
		}
		if err := l.dispatchStatement(src.Name, st); err != nil {
			return err
		}
	}
}

func (l *loader) dispatchStatement(name string, st Statement) error {
	j := job{text: st.Text, src: name, line: st.Line, db: l.curDB, size: int64(len(st.Text))}
	if j.size+1 > l.maxPkt {
		return stmtError(j, fmt.Errorf("statement of %d bytes is larger than the server's max_allowed_packet of %d: raise max_allowed_packet on the server that loads it", j.size, l.maxPkt))
	}
	c := classify(st.Text)
	if c.creates {
		l.tables.Add(1)
	}
	if c.kind == kindSerial {
		l.serial = true
	}
	if l.serial && c.kind != kindSkip {
		c.kind = kindBarrier
	}
	if c.kind != kindSkip && c.kind != kindSession && l.create != "" {
		if err := l.createDefault(j); err != nil {
			return err
		}
		if createsDB(st.Text, j.db) {
			// The input makes the default database itself: run it, then use it.
			if err := l.budget.drain(l.ctx); err != nil {
				return err
			}
			j.db = "" // it does not exist yet
			if err := l.runMain(j, false); err != nil {
				return err
			}
			l.forgetDatabases()
			return nil
		}
	}
	switch c.kind {
	case kindSkip:
		return nil
	case kindSession:
		j.size = 0
		for _, q := range l.queues {
			q.push(j)
		}
		l.main.pending = append(l.main.pending, j)
		l.done.Add(1)
		return nil
	case kindTable:
		return l.dispatchTable(c, j)
	case kindUse:
		return l.runMain(j, true)
	}
	if err := l.budget.drain(l.ctx); err != nil {
		return err
	}
	if err := l.runMain(j, c.changeDB); err != nil {
		return err
	}
	if databaseDDL.MatchString(j.text) {
		l.forgetDatabases()
	}
	return nil
}

// databaseDDL matches statements that create, alter or drop a database.
var databaseDDL = regexp.MustCompile(`(?is)^\s*(/\*!\d*\s*)?(CREATE|ALTER|DROP)\s+(DATABASE|SCHEMA)\b`)

// createDB matches CREATE DATABASE and captures the name, as mariadb-dump
// writes it: CREATE DATABASE /*!32312 IF NOT EXISTS*/ `app` ...
var createDB = regexp.MustCompile("(?is)^\\s*CREATE\\s+(?:DATABASE|SCHEMA)\\s+(?:/\\*!\\d*\\s*)?(?:IF\\s+NOT\\s+EXISTS\\s*)?(?:\\*/\\s*)?(`(?:[^`]|``)+`|[A-Za-z0-9_$]+)")

// createsDB reports whether text creates database name.
func createsDB(text, name string) bool {
	m := createDB.FindStringSubmatch(text)
	if m == nil {
		return false
	}
	got := m[1]
	if strings.HasPrefix(got, "`") {
		got = strings.ReplaceAll(got[1:len(got)-1], "``", "`")
	}
	return strings.EqualFold(got, name)
}

// createDefault makes the default database before the first statement that
// needs it, unless that statement is the input's own CREATE DATABASE of it.
func (l *loader) createDefault(j job) error {
	name := l.create
	l.create = ""
	if createsDB(j.text, name) {
		return nil
	}
	if err := l.main.exec(l.ctx, "CREATE DATABASE IF NOT EXISTS "+quote.Ident(name)); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// forgetDatabases makes every connection run USE again before its next
// statement: a session keeps the character set its database had at USE
// time, so a database created or altered since must be entered afresh.
// Every worker is idle here (the caller drained them).
func (l *loader) forgetDatabases() {
	for _, c := range append(l.workers, l.main) {
		c.stale = true
	}
}

// dispatchTable queues a statement on the worker that owns its table; a
// table seen for the first time goes to the worker with the least work.
// Names are compared without case, in case the server ignores it
// (lower_case_table_names); at worst two tables share a worker.
func (l *loader) dispatchTable(c class, j job) error {
	k := key{strings.ToLower(c.db), strings.ToLower(c.table)}
	if k.db == "" {
		k.db = strings.ToLower(l.curDB)
	}
	w, ok := l.owner[k]
	if !ok {
		for i := range l.load {
			if l.load[i].Load() < l.load[w].Load() {
				w = i
			}
		}
		l.owner[k] = w
	}
	if err := l.budget.acquire(l.ctx, j.size); err != nil {
		return err
	}
	l.load[w].Add(j.size)
	l.queues[w].push(j)
	return nil
}

// runMain runs a statement on the main connection, then re-reads the
// current database if the statement may have changed it.
func (l *loader) runMain(j job, changeDB bool) error {
	if err := l.main.run(l.ctx, j); err != nil {
		return err
	}
	l.done.Add(1)
	if changeDB {
		db, err := l.main.currentDB(l.ctx)
		if err != nil {
			return stmtError(j, err)
		}
		l.curDB = db
	}
	return nil
}

// progress calls f periodically until the returned function is called.
func (l *loader) progress(f func(bytesRead, statements int64)) (stop func()) {
	if f == nil {
		return func() {}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				f(l.raw.Load(), l.done.Load())
			case <-quit:
				f(l.raw.Load(), l.done.Load())
				return
			}
		}
	}()
	return func() { close(quit); <-finished }
}
