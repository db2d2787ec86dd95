package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Querier is what an administrative query runs on: a pool (*sql.DB) or
// one of its connections (*sql.Conn).
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ReadStatus reads SHOW scope STATUS (scope GLOBAL or SESSION) into a
// map, names in upper case. filter, when not "", is a LIKE or WHERE
// clause: the server tests it before it stores a row of the result, and
// the rows stored are most of a read's cost. Both flavours answer SHOW
// STATUS (MySQL has no information_schema.GLOBAL_STATUS).
func ReadStatus(ctx context.Context, q Querier, scope, filter string) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, strings.TrimSpace("SHOW "+scope+" STATUS "+filter))
	if err != nil {
		return nil, fmt.Errorf("read the server's status variables: %w", err)
	}
	defer rows.Close()
	status := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("read the server's status variables: %w", err)
		}
		status[strings.ToUpper(name)] = value
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the server's status variables: %w", err)
	}
	return status, nil
}

// serverThread reports whether a process list row (its user, host and
// command) is a thread of the server itself, not a client: COMMAND
// 'Daemon' (the event scheduler on both flavours, MariaDB's other
// background threads) and the replication threads, which run as "system
// user" with no host. A client's thread always has a host (localhost, or
// an address), and no client can make its thread a daemon, so a client
// named "system user" is killed too. A replica's binary log dump is a
// client like any other: pristine's servers have no replicas, and a lease
// cannot become one (no REPLICATION SLAVE).
func serverThread(user, host, command string) bool {
	return command == "Daemon" || (user == "system user" && host == "")
}

// KillRoundWait is the least time between two rounds of KillOthers.
const KillRoundWait = 5 * time.Millisecond

// KillOthers kills every client connection of the server but c's own and
// spare (the caller's own connections, by id, which a client cannot be
// given: a server never hands out an id twice while it runs), whoever it
// belongs to (a lease, a session inside a routine whose definer is root,
// a handshake not finished, root): by connection id, never by user. It
// returns once the process list shows none: a statement still running
// when its connection was killed has ended, so nothing it makes escapes
// what the caller does next. Past rounds rounds (at least KillRoundWait
// apart) it fails naming what is left.
func KillOthers(ctx context.Context, c *sql.Conn, rounds int, spare ...int64) error {
	own, err := ConnectionID(ctx, c)
	if err != nil {
		return err
	}
	keep := append(slices.Clip(spare), own)
	var left []int64
	for i := 0; i < rounds; i++ {
		if left, err = otherClients(ctx, c, keep); err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		for _, id := range left {
			// A connection that ended meanwhile is not an error.
			_, _ = c.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
		}
		time.Sleep(KillRoundWait)
	}
	return fmt.Errorf("%d client connection(s) did not end after %d KILL rounds (first: id %d)", len(left), rounds, left[0])
}

// KillOtherQueries stops the running statement of every client
// connection but c's own (KILL QUERY); the connections stay.
func KillOtherQueries(ctx context.Context, c *sql.Conn) error {
	own, err := ConnectionID(ctx, c)
	if err != nil {
		return err
	}
	ids, err := otherClients(ctx, c, []int64{own})
	if err != nil {
		return err
	}
	for _, id := range ids {
		_, _ = c.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id))
	}
	return nil
}

// ConnectionID is the server's id of connection c.
func ConnectionID(ctx context.Context, c *sql.Conn) (int64, error) {
	var id int64
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		return 0, fmt.Errorf("read the connection's id: %w", err)
	}
	return id, nil
}

// otherClients lists the ids of the client connections but those of own
// (serverThread says which threads are the server's). It reads SHOW
// PROCESSLIST, which sends its rows as it lists them: a read of
// information_schema.PROCESSLIST, whose INFO column is a BLOB, makes an
// on-disk temporary table, a file created and removed each time.
func otherClients(ctx context.Context, c *sql.Conn, own []int64) ([]int64, error) {
	rows, err := c.QueryContext(ctx, "SHOW PROCESSLIST")
	if err != nil {
		return nil, fmt.Errorf("list the server's connections: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil || len(cols) < 5 {
		return nil, fmt.Errorf("list the server's connections: SHOW PROCESSLIST answered columns %q (%v), want Id, User, Host, db, Command first", cols, err)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var ids []int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("list the server's connections: %w", err)
		}
		id, err := strconv.ParseInt(vals[0].String, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("list the server's connections: id %q: %w", vals[0].String, err)
		}
		if slices.Contains(own, id) || serverThread(vals[1].String, vals[2].String, vals[4].String) {
			continue
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the server's connections: %w", err)
	}
	return ids, nil
}
