package capture

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// snapshot is a set of source connections that all read the same
// consistent state of the server.
type snapshot struct {
	conns []*sql.Conn
	mode  string // "ftwrl", "lock-tables" or "single"
	// GTID is @@gtid_binlog_pos at the snapshot, when binary logging is on.
	GTID string
}

// takeSnapshot opens n connections whose transactions see one state. With
// RELOAD, FLUSH TABLES WITH READ LOCK stops writes while every connection
// starts a transaction WITH CONSISTENT SNAPSHOT; with LOCK TABLES on every
// database, a LOCK TABLES ... READ of every base table does the same for
// the captured databases; otherwise one connection captures alone. The
// lock is held only while the transactions start (milliseconds) and waits
// at most lockWait for running statements.
func takeSnapshot(ctx context.Context, db *sql.DB, f mariadb.Flavor, n int, mode string, tables []tableRef, lockWait time.Duration) (_ *snapshot, err error) {
	if mode == "single" {
		n = 1
	}
	sn := &snapshot{mode: mode}
	defer func() {
		if err != nil {
			sn.close()
		}
	}()
	secs := max(int(lockWait.Seconds()), 1)
	var lock *sql.Conn
	if mode != "single" {
		if lock, err = db.Conn(ctx); err != nil {
			return nil, fmt.Errorf("snapshot: connect: %w", err)
		}
		defer lock.Close()
		if _, err := lock.ExecContext(ctx, fmt.Sprintf("SET SESSION lock_wait_timeout=%d", secs)); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		q := "FLUSH TABLES WITH READ LOCK"
		if mode == "lock-tables" {
			parts := make([]string, 0, len(tables))
			for _, t := range tables {
				parts = append(parts, t.quoted()+" READ")
			}
			q = "LOCK TABLES " + strings.Join(parts, ", ")
		}
		if len(tables) > 0 || mode == "ftwrl" {
			if _, err := lock.ExecContext(ctx, q); err != nil {
				head := "FLUSH TABLES WITH READ LOCK"
				if mode == "lock-tables" {
					head = "LOCK TABLES ... READ"
				}
				return nil, fmt.Errorf("snapshot: %s (waited up to %ds): %w", head, secs, err)
			}
		}
	}
	for i := 0; i < n; i++ {
		c, err := db.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("snapshot: connect: %w", err)
		}
		sn.conns = append(sn.conns, c)
		for _, q := range []string{
			fmt.Sprintf("SET SESSION lock_wait_timeout=%d, time_zone='+00:00', character_set_results=binary, net_write_timeout=600, wait_timeout=3600", secs),
			"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
			"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
		} {
			if _, err := c.ExecContext(ctx, q); err != nil {
				return nil, fmt.Errorf("snapshot: %s: %w", q, err)
			}
		}
	}
	if len(sn.conns) > 0 {
		if v, err := binlogMarker(ctx, sn.conns[0], f); err == nil {
			sn.GTID = v
		}
	}
	if lock != nil {
		if _, err := lock.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
			return nil, fmt.Errorf("snapshot: unlock tables: %w", err)
		}
	}
	return sn, nil
}

func (sn *snapshot) close() {
	for _, c := range sn.conns {
		_, _ = c.ExecContext(context.Background(), "ROLLBACK")
		c.Close()
	}
	sn.conns = nil
}
