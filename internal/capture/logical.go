package capture

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"

	"github.com/go-sql-driver/mysql"
)

// Options tune a capture. The zero value is ready to use.
type Options struct {
	// Workers is the number of source connections that copy rows in
	// parallel (default 4).
	Workers int
	// ChunkRows splits tables with more rows than this (by the optimizer's
	// estimate) into primary-key ranges (default 100000).
	ChunkRows int64
	// LockWait bounds the wait for the read lock that starts the snapshot
	// (lock_wait_timeout; default 30s).
	LockWait time.Duration
	// Insert copies rows with multi-row INSERTs instead of LOAD DATA LOCAL
	// INFILE (slower; kept so bench-capture can compare them).
	Insert bool
	// Stream makes physical capture stream xbstream through pristine's
	// reader instead of letting mariadb-backup write the files.
	Stream bool
	// Progress, when set, receives a live progress line (rows, bytes, rates,
	// ETA) about once a second; give it a terminal.
	Progress io.Writer
	// Log receives one line per step; nil means quiet.
	Log func(format string, args ...any)
	// WithPasswords carries the accounts' authentication (password hashes,
	// plugins); without it each carried account gets a random password
	// nobody knows (docs/fidelity.md, "Accounts").
	WithPasswords bool
	// AfterSnapshot, when set, runs once the snapshot is taken and before
	// rows are copied: a seam for tests that change the source then.
	AfterSnapshot func(ctx context.Context) error
}

func (o *Options) log(format string, args ...any) {
	if o.Log != nil {
		o.Log(format, args...)
	}
}

// Stats describe a finished capture.
type Stats struct {
	Method string `json:"method"`
	// Lock is how the snapshot was shared: ftwrl, lock-tables or single.
	Lock     string        `json:"lock,omitempty"`
	GTID     string        `json:"gtid,omitempty"`
	Tables   int           `json:"tables"`
	Chunks   int           `json:"chunks"`
	Rows     int64         `json:"rows"`
	Bytes    int64         `json:"bytes"`
	Objects  int           `json:"objects"`
	Accounts int           `json:"accounts"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Counters are the source's InnoDB AUTO_INCREMENT counters at a
	// physical copy's consistent point, for ApplyCounters.
	Counters []Counter `json:"-"`
	// CountersAt says when they were read: "block-commit" (under
	// mariadb-backup's BACKUP STAGE BLOCK_COMMIT) or "after-backup".
	CountersAt string `json:"counters_at,omitempty"`
}

var loadSeq atomic.Int64

// Logical copies the source's databases into the server at target (a
// go-sql-driver DSN with full privileges, normally the template build
// server) through one consistent snapshot. On error the target holds a
// partial copy the caller throws away.
func Logical(ctx context.Context, src *Source, target string, opt Options) (Stats, error) {
	st, err := logical(ctx, src, target, opt)
	return st, src.explainTimeout(err)
}

func logical(ctx context.Context, src *Source, target string, opt Options) (Stats, error) {
	start := time.Now()
	st := Stats{Method: "logical"}
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	if opt.ChunkRows == 0 {
		opt.ChunkRows = 100000
	}
	if opt.LockWait <= 0 {
		opt.LockWait = 30 * time.Second
	}
	mode, err := src.checkLogical(ctx)
	if err != nil {
		return st, err
	}
	st.Lock = mode
	if mode == "single" && opt.Workers > 1 {
		opt.log("no RELOAD or LOCK TABLES privilege: capturing on one connection (grant RELOAD for a parallel capture)")
	}
	tables, err := listTables(ctx, src.DB, src.Databases)
	if err != nil {
		return st, err
	}
	st.Tables = len(tables)
	dcfg, err := mysql.ParseDSN(target)
	if err != nil {
		return st, fmt.Errorf("target: %w", err)
	}
	dcfg.InterpolateParams = false
	dcfg.MultiStatements = false
	dconn, err := mysql.NewConnector(dcfg)
	if err != nil {
		return st, fmt.Errorf("target: %w", err)
	}
	dst := sql.OpenDB(dconn)
	defer dst.Close()
	if f, err := mariadb.Probe(ctx, dst); err != nil {
		return st, fmt.Errorf("target: %w", err)
	} else if f.LocalInfileOff() {
		// MySQL refuses LOAD DATA LOCAL unless the server allows it (off
		// by default); the target is pristine's private build server, and
		// the setting is not persisted into the template.
		if _, err := dst.ExecContext(ctx, "SET GLOBAL local_infile = ON"); err != nil {
			return st, fmt.Errorf("target: allow LOAD DATA LOCAL: %w", err)
		}
	}
	// The snapshot's lock statements may wait lockWait for the lock.
	scfg := src.Config.Clone()
	scfg.ReadTimeout = max(scfg.ReadTimeout, opt.LockWait+30*time.Second)
	sconn, err := connector(scfg, src.timeouts)
	if err != nil {
		return st, err
	}
	sdb := sql.OpenDB(sconn) // snapshot sessions, closed with their changed settings
	defer sdb.Close()

	refs := make([]tableRef, len(tables))
	for i, t := range tables {
		refs[i] = t.tableRef
	}
	sn, err := takeSnapshot(ctx, sdb, src.Flavor, opt.Workers, mode, refs, opt.LockWait)
	if err != nil {
		return st, explain(err)
	}
	defer sn.close()
	st.GTID = sn.GTID
	opt.log("snapshot taken on %d connection(s) (%s)%s", len(sn.conns), mode, gtidNote(sn.GTID))

	main, err := targetSession(ctx, dst, false)
	if err != nil {
		return st, err
	}
	defer main.Close()
	if err := createSchema(ctx, src.DB, src.Flavor, sn.conns[0], main, src.Databases, tables); err != nil {
		return st, explain(err)
	}
	if opt.AfterSnapshot != nil {
		if err := opt.AfterSnapshot(ctx); err != nil {
			return st, err
		}
	}
	var chunks []chunk
	byTable := map[*table][]chunk{}
	sortBySize(tables)
	for _, t := range tables {
		if t.sequence {
			continue
		}
		cs, err := split(ctx, sn.conns[0], t, opt.ChunkRows)
		if err != nil {
			return st, explain(err)
		}
		chunks = append(chunks, cs...)
		byTable[t] = cs
	}
	st.Chunks = len(chunks)
	var total int64
	for _, t := range tables {
		total += t.bytes
	}
	var n counters
	stop := startProgress(opt.Progress, &n, total)
	if opt.Insert {
		err = insertChunks(ctx, sn, dst, chunks, &n)
	} else {
		err = loadTables(ctx, sn, dst, tables, byTable, &n)
	}
	stop()
	st.Rows, st.Bytes = n.rows.Load(), n.bytes.Load()
	if err != nil {
		return st, explain(err)
	}
	sn.close()
	opt.log("copied %d rows of %d tables (%d chunks)", st.Rows, st.Tables, st.Chunks)

	accts, skipped, err := readAccounts(ctx, src.DB, src.Flavor, src.Databases)
	if err != nil {
		return st, explain(err)
	}
	if skipped != "" {
		opt.log("%s", skipped)
	}
	made, err := createAccounts(ctx, main, accts, opt.WithPasswords)
	if err != nil {
		return st, err
	}
	st.Accounts = len(made)
	for _, d := range src.Databases {
		objs, err := readObjects(ctx, src.DB, d)
		if err != nil {
			return st, explain(err)
		}
		if err := createObjects(ctx, main, objs); err != nil {
			return st, err
		}
		st.Objects += len(objs)
	}
	if err := grantAccounts(ctx, main, made); err != nil {
		return st, err
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

func gtidNote(g string) string {
	if g == "" {
		return ""
	}
	return " at GTID " + g
}

// targetSession opens a session on the target prepared for loading.
func targetSession(ctx context.Context, dst *sql.DB, binary bool) (*sql.Conn, error) {
	c, err := dst.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the template server: %w", err)
	}
	q := "SET SESSION foreign_key_checks=0, unique_checks=0, sql_mode='NO_AUTO_VALUE_ON_ZERO', time_zone='+00:00'"
	if binary {
		q += ", character_set_client=binary, character_set_connection=binary"
	}
	if _, err := c.ExecContext(ctx, q); err != nil {
		c.Close()
		return nil, fmt.Errorf("prepare template server session: %w", err)
	}
	return c, nil
}

// createSchema creates the databases, tables and sequences on the target,
// read from srcDB, a server of flavour f.
func createSchema(ctx context.Context, srcDB *sql.DB, f mariadb.Flavor, snap, dst *sql.Conn, dbs []string, tables []*table) error {
	for _, d := range dbs {
		var name, create string
		if err := srcDB.QueryRowContext(ctx, "SHOW CREATE DATABASE "+quote.Ident(d)).Scan(&name, &create); err != nil {
			return fmt.Errorf("show create database %s: %w", d, err)
		}
		if _, err := dst.ExecContext(ctx, create); err != nil {
			return fmt.Errorf("create database %s: %w", d, err)
		}
	}
	// A template that page-compresses its tables (template build
	// --innodb-compression: MariaDB's innodb_compression_default).
	var pageCompressed bool
	_ = dst.QueryRowContext(ctx, "SELECT @@session.innodb_compression_default").Scan(&pageCompressed)
	for _, t := range tables {
		if err := describe(ctx, srcDB, f, t); err != nil {
			return err
		}
		qs := []string{"USE " + quote.Ident(t.db), t.create}
		if pageCompressed && mariadb.KeepsRowFormat(t.create) {
			qs = []string{qs[0], "SET SESSION innodb_compression_default=OFF", t.create, "SET SESSION innodb_compression_default=ON"}
		}
		for _, q := range qs {
			if _, err := dst.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("create table %s: %w", t, err)
			}
		}
		if t.sequence {
			var next string
			if err := snap.QueryRowContext(ctx, "SELECT next_not_cached_value FROM "+t.quoted()).Scan(&next); err != nil {
				return fmt.Errorf("read sequence %s: %w", t, err)
			}
			if _, err := strconv.ParseInt(next, 10, 64); err != nil {
				return fmt.Errorf("read sequence %s: value %q", t, next)
			}
			if _, err := dst.ExecContext(ctx, "SELECT SETVAL("+t.quoted()+", "+next+", 0)"); err != nil {
				return fmt.Errorf("set sequence %s: %w", t, err)
			}
		}
	}
	return nil
}

// insertChunks copies chunks with INSERT on one worker per snapshot
// connection; the first error stops them all.
func insertChunks(ctx context.Context, sn *snapshot, dst *sql.DB, chunks []chunk, n *counters) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan chunk)
	go func() {
		defer close(next)
		for _, c := range chunks {
			select {
			case next <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	workers := min(len(sn.conns), max(len(chunks), 1))
	for i := 0; i < workers; i++ {
		srcConn := sn.conns[i]
		wg.Go(func() {
			d, err := targetSession(ctx, dst, true)
			if err != nil {
				cancel(err)
				return
			}
			defer d.Close()
			for c := range next {
				if err := copyInsert(ctx, srcConn, d, c, n); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// explain adds the likely cause to errors a person must act on.
func explain(err error) error {
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, driver.ErrBadConn):
		return fmt.Errorf("%w: the source closed the connection (was it killed, or did the server restart?); run the build again", err)
	case errors.As(err, &me) && (me.Number == 1927 || me.Number == 1053): // ER_CONNECTION_KILLED, ER_SERVER_SHUTDOWN
		return fmt.Errorf("%w: the capture's connection was killed on the source; run the build again", err)
	case errors.As(err, &me) && me.Number == 1205:
		return fmt.Errorf("%w: another session holds a lock the capture needs (long statements or LOCK TABLES); run the build when it is done, or raise --lock-wait", err)
	case isAccessDenied(err):
		return fmt.Errorf("%w: %v", ErrPrivilege, err)
	}
	return err
}

func isAccessDenied(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1044, 1045, 1142, 1143, 1227, 1370: // DB, user, table, column, specific, routine access denied
		return true
	}
	return false
}
