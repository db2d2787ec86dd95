package pool

import (
	"context"
	"database/sql"
	"fmt"
)

// accountExists reports whether the slot's server has account user. It
// reads mysql.user, which both flavours have (MariaDB's is a view of
// mysql.global_priv, which MySQL lacks).
func accountExists(ctx context.Context, admin *sql.DB, user string) (bool, error) {
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE User = ?", user).Scan(&n); err != nil {
		return false, fmt.Errorf("look up lease account %s: %w", user, err)
	}
	return n > 0, nil
}

// serverPort asks the server which TCP port it listens on.
func serverPort(ctx context.Context, admin *sql.DB) (int, error) {
	var port int
	if err := admin.QueryRowContext(ctx, "SELECT @@GLOBAL.port").Scan(&port); err != nil {
		return 0, fmt.Errorf("read the server's port: %w", err)
	}
	if port <= 0 {
		return 0, fmt.Errorf("the server reports port %d: it does not listen on TCP", port)
	}
	return port, nil
}
