package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// What a capture reads differently from a MySQL 8/9 source (or writes to a
// MySQL target): the change marker (below), generated columns (schema.go),
// roles (mysql.role_edges, mysql.default_roles: scope.go), the grant tables
// a physical copy's accounts are pruned in, and passwords (ALTER USER).
// Each is a capability of the source's mariadb.Flavor, read once when the
// source is opened (Source.Flavor).

// binlogMarker is the source's change marker with binary logging on:
// MariaDB's @@gtid_binlog_pos; on MySQL, @@gtid_executed, or with GTIDs off
// the binary log's file and position (SHOW BINARY LOG STATUS; SHOW MASTER
// STATUS before 8.2).
func binlogMarker(ctx context.Context, q interface {
	mariadb.RowQueryer
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, f mariadb.Flavor) (string, error) {
	var pos sql.NullString
	if f.GTIDBinlogPos() {
		if err := q.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			return "", fmt.Errorf("read @@gtid_binlog_pos: %w", err)
		}
		return pos.String, nil
	}
	if err := q.QueryRowContext(ctx, "SELECT @@gtid_executed").Scan(&pos); err != nil {
		return "", fmt.Errorf("read @@gtid_executed: %w", err)
	}
	if s := strings.Join(strings.Fields(pos.String), ""); s != "" {
		return s, nil
	}
	for _, stmt := range []string{"SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"} {
		rows, err := q.QueryContext(ctx, stmt)
		if err != nil {
			continue
		}
		var file, at string
		if rows.Next() {
			cols, _ := rows.Columns()
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err == nil && len(vals) >= 2 {
				file, at = vals[0].String, vals[1].String
			}
		}
		rows.Close()
		if file != "" {
			return file + ":" + at, nil
		}
		return "", nil // binary logging is off after all
	}
	return "", errors.New("read the binary log position: SHOW BINARY LOG STATUS needs REPLICATION CLIENT (or give the source GTIDs)")
}
