package pool

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/quote"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// account is the user of one unit: made fresh for every lease, dropped (and
// its connections killed) when the lease ends, so a former holder's
// credentials stop working at release.
type account struct {
	user, password string
}

func (a account) ok() bool { return a.user != "" }

// waitGone waits until the server has no connection of user left, so a
// statement still running when its connection was killed has finished.
func waitGone(ctx context.Context, admin *sql.DB, user string) error {
	for i := 0; i < 400; i++ {
		var n int
		if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", user).Scan(&n); err != nil {
			return fmt.Errorf("list lease connections: %w", err)
		}
		if n == 0 {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("connections of %s did not end within 2s", user)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// openAdmin connects as root over the slot's unix socket with the root's
// admin secret; root is never handed out.
func openAdmin(in *mariadb.Instance) (*sql.DB, error) {
	db, err := in.Open("")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(1)
	return db, nil
}

// newAccount creates a user that can reach database db of this server
// only (see LeaseGrants).
func newAccount(ctx context.Context, admin *sql.DB, db string, shared bool) (account, error) {
	a := account{user: "lease_" + randomHex(6), password: randomHex(16)}
	qs := []string{"CREATE USER " + quote.Account(a.user, "%") + " IDENTIFIED BY " + quote.String(a.password)}
	for _, g := range LeaseGrants(db, shared) {
		qs = append(qs, "GRANT "+g+" TO "+quote.Account(a.user, "%"))
	}
	for _, q := range qs {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return account{}, fmt.Errorf("create lease account: %w", err)
		}
	}
	return a, nil
}

// LeaseGrants are the privileges of a lease account, as "PRIVS ON WHAT"
// (docs/security.md explains each). They are all database-level: no
// global privilege at all, so no FILE, SUPER, SHUTDOWN, PROCESS, RELOAD,
// CREATE USER, SET USER (no DEFINER other than itself), BINLOG ADMIN,
// CONNECTION ADMIN, nor GRANT OPTION.
//
// With one database per slot the server serves its holder alone, who gets
// every database-level privilege on every database (`%`), its own and any
// it creates, except the system schemas: a database-level grant on the
// exact name `mysql` (and `sys`) is matched before the wildcard, so there
// the account has only SHOW VIEW, which without SELECT shows nothing. It
// cannot write the grant tables or mysql.proc, so it cannot make itself
// root of its slot. With several databases per slot, every privilege on
// its own database only.
func LeaseGrants(db string, shared bool) []string {
	if shared {
		return []string{"ALL PRIVILEGES ON " + quote.Ident(db) + ".*"}
	}
	return []string{
		"ALL PRIVILEGES ON `%`.*",
		"SHOW VIEW ON `mysql`.*",
		"SHOW VIEW ON `sys`.*",
	}
}

// endAccount kills the account's connections and drops it.
func endAccount(ctx context.Context, admin *sql.DB, a account) error {
	if err := killConnections(ctx, admin, a.user); err != nil {
		return err
	}
	if _, err := admin.ExecContext(ctx, "DROP USER IF EXISTS "+quote.Account(a.user, "%")); err != nil {
		return fmt.Errorf("drop lease account: %w", err)
	}
	return nil
}

func killConnections(ctx context.Context, admin *sql.DB, user string) error {
	rows, err := admin.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?", user)
	if err != nil {
		return fmt.Errorf("list lease connections: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		// A connection that ended meanwhile is not an error.
		_, _ = admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
	}
	return nil
}

// isWriteCounter tells the status variables (upper case) whose sum moves
// when anything is written. Global variables are hashed apart
// (globalsHash), though lease accounts cannot change them (no global
// privileges, see LeaseGrants). They are read with SHOW GLOBAL STATUS,
// which both flavours answer (MySQL has no information_schema.GLOBAL_STATUS).
//
// On MariaDB: the InnoDB log sequence number (every InnoDB change, DDL
// included), row writes of every engine (Handler_write/update/delete,
// which leave internal temporary tables out: Handler_tmp_*), and DDL and
// account statements (temporary tables, which die with their connection,
// apart).
//
// On MySQL (mysql true) neither the log sequence number nor row counters
// hold still: the LSN moves on its own for a few seconds after the server
// starts and after account statements (InnoDB's purge of the grant
// tables' undo), and Handler_* and Innodb_rows_* count internal temporary
// tables, which pristine's own SHOW and processlist queries write. The
// statements that write are counted instead: DDL and account statements
// as above, and Com_insert, _update, _delete, _replace (their multi-table
// and SELECT forms), LOAD DATA and CALL, which MySQL counts also when a
// stored function, procedure or trigger runs them; whatever engine they
// write to, whether or not they changed a row.
func isWriteCounter(name string, mysql bool) bool {
	switch name {
	case mariadb.MariaDB.LSNStatus():
		return !mysql
	case "COM_TRUNCATE", "COM_GRANT", "COM_REVOKE", "COM_REVOKE_ALL", "COM_SET_PASSWORD",
		"COM_INSTALL_PLUGIN", "COM_UNINSTALL_PLUGIN":
		return true
	case "HANDLER_WRITE", "HANDLER_UPDATE", "HANDLER_DELETE":
		return !mysql
	case "COM_INSERT", "COM_INSERT_SELECT", "COM_UPDATE", "COM_UPDATE_MULTI", "COM_DELETE", "COM_DELETE_MULTI",
		"COM_REPLACE", "COM_REPLACE_SELECT", "COM_LOAD", "COM_CALL_PROCEDURE":
		return mysql
	case "COM_CREATE_TEMPORARY_TABLE", "COM_DROP_TEMPORARY_TABLE":
		return false
	}
	for _, p := range []string{"COM_CREATE_", "COM_DROP_", "COM_ALTER_", "COM_RENAME_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// writeMark reads the slot's write counters and a hash of its global
// variables, as one string.
func writeMark(ctx context.Context, admin *sql.DB) (string, error) {
	counters, err := writeCounters(ctx, admin)
	if err != nil {
		return "", err
	}
	globals, err := globalsHash(ctx, admin)
	if err != nil {
		return "", err
	}
	return counters + " " + globals, nil
}

// withCounters is mark with its write counters replaced.
func withCounters(mark, counters string) string {
	_, globals, _ := strings.Cut(mark, " ")
	return counters + " " + globals
}

// writeCounters reads the slot's write counters (isWriteCounter) and
// returns their sum.
func writeCounters(ctx context.Context, admin *sql.DB) (string, error) {
	sum, _, err := readWriteCounters(ctx, admin)
	return sum, err
}

// readWriteCounters reads the write counters once, and whether the server
// is MySQL.
func readWriteCounters(ctx context.Context, admin *sql.DB) (string, bool, error) {
	rows, err := admin.QueryContext(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return "", false, fmt.Errorf("read write counters: %w", err)
	}
	defer rows.Close()
	status := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return "", false, fmt.Errorf("read write counters: %w", err)
		}
		status[strings.ToUpper(name)] = value
	}
	if err := rows.Err(); err != nil {
		return "", false, fmt.Errorf("read write counters: %w", err)
	}
	_, mysql := status[mariadb.MySQL.LSNStatus()]
	var sum uint64
	for name, value := range status {
		if !isWriteCounter(name, mysql) {
			continue
		}
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return "", false, fmt.Errorf("read write counters: %s=%q is not a count", name, value)
		}
		sum += n
	}
	return strconv.FormatUint(sum, 10), mysql, nil
}

// globalsHash hashes every global variable, name and value, so a global
// change (SET GLOBAL, by any path) makes a release --unchanged dirty. The
// GTID positions, which move only with replication or the binary log
// (both off), are left out.
func globalsHash(ctx context.Context, admin *sql.DB) (string, error) {
	rows, err := admin.QueryContext(ctx, "SHOW GLOBAL VARIABLES")
	if err != nil {
		return "", fmt.Errorf("hash global variables: %w", err)
	}
	defer rows.Close()
	h := sha256.New()
	for rows.Next() {
		var name string
		var value sql.RawBytes
		if err := rows.Scan(&name, &value); err != nil {
			return "", fmt.Errorf("hash global variables: %w", err)
		}
		if strings.HasPrefix(strings.ToLower(name), "gtid_") {
			continue
		}
		fmt.Fprintf(h, "%s=%d:%s\n", name, len(value), value)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("hash global variables: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
