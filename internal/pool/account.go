package pool

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

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
// only (see LeaseGrants); units is the number of databases of the slot.
//
// The account may hold at most its share of max_connections -
// adminReserve connections at once (MAX_USER_CONNECTIONS), so a holder's
// own connections never shut pristine's admin, or the other holders of
// the slot's databases, out of its slot.
func newAccount(ctx context.Context, admin querier, db string, units int) (account, error) {
	shared := units > 1
	a := account{user: "lease_" + randomHex(6), password: randomHex(16)}
	var maxConn int
	if err := admin.QueryRowContext(ctx, "SELECT @@GLOBAL.max_connections").Scan(&maxConn); err != nil {
		return account{}, fmt.Errorf("create lease account: read max_connections: %w", err)
	}
	qs := []string{"CREATE USER " + quote.Account(a.user, "%") + " IDENTIFIED BY " + quote.String(a.password) +
		fmt.Sprintf(" WITH MAX_USER_CONNECTIONS %d", leaseConnections(maxConn, units))}
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

// adminReserve is how many of a server's max_connections a lease account
// leaves to pristine's admin (whose pool holds up to two connections)
// and to a root session for debugging.
const adminReserve = 4

// leaseConnections is a lease account's MAX_USER_CONNECTIONS on a server
// with maxConn max_connections and units databases.
func leaseConnections(maxConn, units int) int { return max((maxConn-adminReserve)/max(units, 1), 1) }

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

// writeMarkQuery sums the counters that move when anything is written: the
// InnoDB log sequence number (every InnoDB change, DDL included), row
// writes of every engine (internal temporary tables are counted apart, in
// Handler_tmp_*), and DDL and account statements (temporary tables, which
// die with their connection, apart). Every name it lists exists in
// MariaDB 10.11's GLOBAL_STATUS (TestWriteMarkCounters): SET PASSWORD has
// no counter of its own there, and its write to the grant tables moves
// Handler_update. Global variables are hashed apart
// (globalsHash), though lease accounts cannot change them (no global
// privileges, see LeaseGrants).
var writeMarkQuery = `SELECT CAST(SUM(VARIABLE_VALUE) AS CHAR) FROM information_schema.GLOBAL_STATUS
 WHERE (VARIABLE_NAME IN ('` + strings.Join(writeCounterNames, "','") + `')
        OR VARIABLE_NAME LIKE 'COM\_CREATE\_%' OR VARIABLE_NAME LIKE 'COM\_DROP\_%'
        OR VARIABLE_NAME LIKE 'COM\_ALTER\_%' OR VARIABLE_NAME LIKE 'COM\_RENAME\_%')
   AND VARIABLE_NAME NOT IN ('COM_CREATE_TEMPORARY_TABLE','COM_DROP_TEMPORARY_TABLE')`

// writeCounterNames are the counters writeMarkQuery names one by one.
var writeCounterNames = []string{"INNODB_LSN_CURRENT", "HANDLER_WRITE", "HANDLER_UPDATE", "HANDLER_DELETE",
	"COM_TRUNCATE", "COM_GRANT", "COM_REVOKE", "COM_REVOKE_ALL", "COM_INSTALL_PLUGIN", "COM_UNINSTALL_PLUGIN"}

// writeMark reads the slot's write counters and a hash of its global
// variables, as one string.
func writeMark(ctx context.Context, admin querier) (string, error) {
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

// writeCounters reads the slot's write counters (writeMarkQuery).
func writeCounters(ctx context.Context, admin querier) (string, error) {
	var counters sql.NullString
	if err := admin.QueryRowContext(ctx, writeMarkQuery).Scan(&counters); err != nil {
		return "", fmt.Errorf("read write counters: %w", err)
	}
	return counters.String, nil
}

// globalsHash hashes every global variable, name and value, so a global
// change (SET GLOBAL, by any path) makes a release --unchanged dirty. The
// GTID positions, which move only with replication or the binary log
// (both off), are left out.
func globalsHash(ctx context.Context, admin querier) (string, error) {
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
