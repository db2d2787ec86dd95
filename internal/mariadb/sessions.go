package mariadb

import (
	"context"
	"database/sql"
	"fmt"
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

// clientsQuery lists the client connections but the caller's own. A
// thread of the server itself is no client: COMMAND 'Daemon' (the event
// scheduler on both flavours, MariaDB's other background threads) and
// the replication threads, which run as "system user" with no host. A
// client's thread always has a host (localhost, or an address), and no
// client can make its thread a daemon, so a client named "system user"
// is killed too. A replica's binary log dump is a client like any other:
// pristine's servers have no replicas, and a lease cannot become one (no
// REPLICATION SLAVE).
const clientsQuery = "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND <> 'Daemon' AND NOT (USER = 'system user' AND HOST = '')"

// KillRoundWait is the least time between two rounds of KillOthers.
const KillRoundWait = 5 * time.Millisecond

// KillOthers kills every client connection of the server but q's own
// (q must be one connection, a *sql.Conn), whoever it belongs to (a
// lease, a session inside a routine whose definer is root, a handshake
// not finished, root): by connection id, never by user. It returns once
// the process list shows none: a statement still running when its
// connection was killed has ended, so nothing it makes escapes what the
// caller does next. Past rounds rounds (at least KillRoundWait apart) it
// fails naming what is left.
func KillOthers(ctx context.Context, q Querier, rounds int) error {
	var left []int64
	for i := 0; i < rounds; i++ {
		var err error
		if left, err = OtherClients(ctx, q); err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		for _, id := range left {
			// A connection that ended meanwhile is not an error.
			_, _ = q.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
		}
		time.Sleep(KillRoundWait)
	}
	return fmt.Errorf("%d client connection(s) did not end after %d KILL rounds (first: id %d)", len(left), rounds, left[0])
}

// KillOtherQueries stops the running statement of every client
// connection but q's own (KILL QUERY); the connections stay.
func KillOtherQueries(ctx context.Context, q Querier) error {
	ids, err := OtherClients(ctx, q)
	if err != nil {
		return err
	}
	for _, id := range ids {
		_, _ = q.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id))
	}
	return nil
}

// OtherClients lists the ids of the client connections other than q's
// own (clientsQuery says which threads are the server's own).
func OtherClients(ctx context.Context, q Querier) ([]int64, error) {
	rows, err := q.QueryContext(ctx, clientsQuery)
	if err != nil {
		return nil, fmt.Errorf("list the server's connections: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list the server's connections: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the server's connections: %w", err)
	}
	return ids, nil
}
