package mariadb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"strings"

	"github.com/pristinedb/pristine/internal/quote"
)

// SecureAccounts leaves a data directory with one administrative account,
// root@localhost, identified by password, and no anonymous account:
// root at any other host (127.0.0.1, ::1, the host name, '%') and the
// mysql@localhost a Debian install authenticates by unix_socket are dropped,
// or, when a view, routine, trigger or event names it as DEFINER, kept
// with a random password nobody knows and locked, so those objects still
// run. It must run on a server nobody else can reach (started with
// --skip-networking, its socket in a private directory); grantTablesSkipped
// says it was also started with --skip-grant-tables (a data directory from
// elsewhere, whose root password pristine does not know). The password is
// sent as SQL over the private socket, never in argv or a log.
func SecureAccounts(ctx context.Context, db *sql.DB, password string, grantTablesSkipped bool) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("secure accounts: %w", err)
	}
	defer c.Close()
	if grantTablesSkipped {
		// Loads the grant tables, so account statements work.
		if _, err := c.ExecContext(ctx, "FLUSH PRIVILEGES"); err != nil {
			return fmt.Errorf("secure accounts: load grant tables: %w", err)
		}
	}
	definers, err := listDefiners(ctx, c)
	if err != nil {
		return fmt.Errorf("secure accounts: %w", err)
	}
	type acct struct{ user, host string }
	var extra []acct
	rows, err := c.QueryContext(ctx, "SELECT User, Host FROM mysql.user WHERE (User = 'root' AND Host <> 'localhost') OR User = '' OR (User = 'mysql' AND Host <> '')")
	if err != nil {
		return fmt.Errorf("secure accounts: list accounts: %w", err)
	}
	for rows.Next() {
		var a acct
		if err := rows.Scan(&a.user, &a.host); err != nil {
			rows.Close()
			return fmt.Errorf("secure accounts: list accounts: %w", err)
		}
		extra = append(extra, a)
	}
	rows.Close()
	var qs []string
	for _, a := range extra {
		name := quote.Account(a.user, a.host)
		if definers[a.user+"@"+a.host] && a.user != "" {
			qs = append(qs, "ALTER USER "+name+" IDENTIFIED BY "+quote.String(RandomSecret())+" ACCOUNT LOCK")
		} else {
			qs = append(qs, "DROP USER "+name)
		}
	}
	qs = append(qs,
		"CREATE USER IF NOT EXISTS 'root'@'localhost'",
		"ALTER USER 'root'@'localhost' IDENTIFIED BY "+quote.String(password)+" ACCOUNT UNLOCK",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'localhost' WITH GRANT OPTION",
	)
	for _, q := range qs {
		if _, err := c.ExecContext(ctx, q); err != nil {
			// The statement may hold the password: name only its verb.
			return fmt.Errorf("secure accounts: %s: %w", strings.Join(strings.Fields(q)[:2], " "), err)
		}
	}
	return nil
}

// LockAccount gives an account a random password nobody keeps and locks
// it: nobody can log in as it, and objects it is the DEFINER of keep
// running. A missing account is not an error.
func LockAccount(ctx context.Context, db *sql.DB, user, host string) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE User = ? AND Host = ?", user, host).Scan(&n); err != nil {
		return fmt.Errorf("lock account %s@%s: %w", user, host, err)
	}
	if n == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, "ALTER USER "+quote.Account(user, host)+" IDENTIFIED BY "+quote.String(RandomSecret())+" ACCOUNT LOCK"); err != nil {
		return fmt.Errorf("lock account %s@%s: %w", user, host, err)
	}
	return nil
}

// RandomSecret is a password nobody is told: 128 random bits
// (crypto/rand.Text, 26 base32 characters).
func RandomSecret() string { return rand.Text() }

// listDefiners returns the DEFINERs (user@host) of every view, routine,
// trigger and event. information_schema.EVENTS refuses to answer while the
// event scheduler is disabled (--skip-grant-tables disables it): MariaDB's
// mysql.event is read then.
func listDefiners(ctx context.Context, c *sql.Conn) (map[string]bool, error) {
	definers := map[string]bool{}
	read := func(q string) error {
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				return err
			}
			definers[d] = true
		}
		return rows.Err()
	}
	if err := read(`SELECT DEFINER FROM information_schema.VIEWS
		UNION SELECT DEFINER FROM information_schema.ROUTINES
		UNION SELECT DEFINER FROM information_schema.TRIGGERS`); err != nil {
		return nil, fmt.Errorf("list definers: %w", err)
	}
	if err := read("SELECT DEFINER FROM information_schema.EVENTS"); err != nil {
		if err := read("SELECT CONVERT(definer USING utf8mb4) FROM mysql.event"); err != nil {
			return nil, fmt.Errorf("list event definers: %w", err)
		}
	}
	return definers, nil
}
