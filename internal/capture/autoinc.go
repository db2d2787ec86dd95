package capture

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/quote"
)

// Counter is an InnoDB table's next AUTO_INCREMENT value on the source.
type Counter struct {
	Schema, Table string
	Next          uint64
}

// Why physical capture carries counters: InnoDB keeps a table's
// AUTO_INCREMENT counter in memory and persists, with each row it writes,
// only the values rows took. An INSERT ... SELECT reserves ids in batches
// (2,000 rows take 1..2047 and leave the counter at 2048), and deleted rows
// at the top of the range leave the counter above the largest id. A data
// directory copied by mariadb-backup starts with the persisted value, so
// its next id (2001) is not the source's (2048). Physical therefore reads
// the source's counters while mariadb-backup holds BACKUP STAGE
// BLOCK_COMMIT (the copy's consistent point: no transaction commits in
// between), and the template build applies them with ApplyCounters before
// its clean stop, which persists them. Aria and MyISAM keep their counters
// in their files, which the copy carries as they are.

// blockCommitLine is what mariadb-backup prints once it holds BACKUP STAGE
// BLOCK_COMMIT.
const blockCommitLine = "Acquired locks for BACKUP STAGE BLOCK_COMMIT"

// readCounters reads the InnoDB AUTO_INCREMENT counters of the captured
// databases.
func (s *Source) readCounters(ctx context.Context) ([]Counter, error) {
	in := make([]string, len(s.Databases))
	for i, d := range s.Databases {
		in[i] = quote.String(d)
	}
	var out []Counter
	var perr error
	err := scan(ctx, s.DB, "SELECT TABLE_SCHEMA, TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ("+strings.Join(in, ",")+") AND ENGINE = 'InnoDB' AND AUTO_INCREMENT IS NOT NULL", func(r []string) {
		n, err := strconv.ParseUint(r[2], 10, 64)
		if err != nil {
			perr = fmt.Errorf("AUTO_INCREMENT of %s.%s: %w", r[0], r[1], err)
			return
		}
		out = append(out, Counter{Schema: r[0], Table: r[1], Next: n})
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return nil, fmt.Errorf("read the source's AUTO_INCREMENT counters: %w", err)
	}
	return out, nil
}

// counterWatch is mariadb-backup's stderr: it keeps every byte for error
// messages and, when the backup reaches BLOCK_COMMIT, stops the process
// (SIGSTOP, so the lock is held however long the read takes), reads the
// source's counters and lets it go on (SIGCONT).
type counterWatch struct {
	buf     *bytes.Buffer
	ctx     context.Context
	src     *Source
	cmd     *exec.Cmd
	mu      sync.Mutex
	line    []byte
	read    bool
	atPoint bool // read at the consistent point, not after the backup
	got     []Counter
	err     error
}

func (w *counterWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.read {
		return len(p), nil
	}
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		l := w.line[:i]
		w.line = w.line[i+1:]
		if bytes.Contains(l, []byte(blockCommitLine)) {
			w.readNow(true)
			break
		}
	}
	return len(p), nil
}

// readNow reads the counters, holding mariadb-backup still if it runs.
func (w *counterWatch) readNow(atPoint bool) {
	w.read, w.atPoint, w.line = true, atPoint, nil
	if atPoint && w.cmd != nil && w.cmd.Process != nil {
		if err := w.cmd.Process.Signal(syscall.SIGSTOP); err == nil {
			defer w.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	w.got, w.err = w.src.readCounters(ctx)
}

// result is the counters read at BLOCK_COMMIT or, when mariadb-backup
// never said it reached it (another version's wording), right after the
// backup: a write in between can only make the copy's counter larger than
// its rows need, never hand out an id twice.
func (w *counterWatch) result() ([]Counter, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.read {
		w.readNow(false)
	}
	return w.got, w.atPoint, w.err
}

// ApplyCounters sets each table's AUTO_INCREMENT counter on the template
// server db to the source's, where the copy's is lower (ALTER TABLE ...
// AUTO_INCREMENT, in place: no rows are copied). A clean stop afterwards
// persists them. See Counter.
func ApplyCounters(ctx context.Context, db *sql.DB, counters []Counter) (int, error) {
	n := 0
	for _, c := range counters {
		name := quote.Ident(c.Schema) + "." + quote.Ident(c.Table)
		var cur uint64
		err := db.QueryRowContext(ctx, "SELECT IFNULL(AUTO_INCREMENT, 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", c.Schema, c.Table).Scan(&cur)
		if err != nil {
			return n, fmt.Errorf("read the copy's AUTO_INCREMENT of %s: %w", name, err)
		}
		if cur >= c.Next {
			continue
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s AUTO_INCREMENT = %d", name, c.Next)); err != nil {
			return n, fmt.Errorf("set the AUTO_INCREMENT of %s to the source's %d: %w", name, c.Next, err)
		}
		n++
	}
	return n, nil
}

// PersistCounters makes a server's InnoDB AUTO_INCREMENT counters survive
// its stop: the template build calls it before the clean stop. InnoDB
// persists only the ids rows took, so a counter above the largest id + 1
// (ids reserved by INSERT ... SELECT, rows deleted at the top) would come
// back lower in every clone; ALTER TABLE ... AUTO_INCREMENT with the
// counter's own value persists it. Tables whose counter is the largest id
// + 1, the common case, are left alone. It returns the number of tables
// set.
func PersistCounters(ctx context.Context, db *sql.DB) (int, error) {
	var all []AutoIncColumn
	var perr error
	err := scan(ctx, db, `SELECT t.TABLE_SCHEMA, t.TABLE_NAME, c.COLUMN_NAME, t.AUTO_INCREMENT
	 FROM information_schema.TABLES t JOIN information_schema.COLUMNS c
	   ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME AND c.EXTRA LIKE '%auto_increment%'
	 WHERE t.ENGINE = 'InnoDB' AND t.AUTO_INCREMENT > 1
	   AND t.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`, func(r []string) {
		n, err := strconv.ParseUint(r[3], 10, 64)
		if err != nil {
			perr = fmt.Errorf("AUTO_INCREMENT of %s.%s: %w", r[0], r[1], err)
		}
		all = append(all, AutoIncColumn{Counter{r[0], r[1], n}, r[2]})
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return 0, fmt.Errorf("persist AUTO_INCREMENT counters: %w", err)
	}
	return PersistCountersOf(ctx, db, all)
}

// AutoIncColumn is an InnoDB table's AUTO_INCREMENT counter (Next, above
// 1) with the column it numbers.
type AutoIncColumn struct {
	Counter
	Column string
}

// PersistCountersOf is PersistCounters for counters the caller listed
// already (the template build reads them with its other end-of-build
// checks, in one pass over information_schema).
func PersistCountersOf(ctx context.Context, db *sql.DB, all []AutoIncColumn) (int, error) {
	n := 0
	for _, c := range all {
		name := quote.Ident(c.Schema) + "." + quote.Ident(c.Table)
		var top sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT CAST(MAX("+quote.Ident(c.Column)+") AS DECIMAL(65)) FROM "+name).Scan(&top); err != nil {
			return n, fmt.Errorf("persist the AUTO_INCREMENT counter of %s: %w", name, err)
		}
		if top.Valid {
			if m, err := strconv.ParseUint(top.String, 10, 64); err == nil && m+1 >= c.Next {
				continue
			}
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s AUTO_INCREMENT = %d", name, c.Next)); err != nil {
			return n, fmt.Errorf("persist the AUTO_INCREMENT counter of %s (%d): %w", name, c.Next, err)
		}
		n++
	}
	return n, nil
}
