package pool

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/internal/quote"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// account is the user of one unit: given a new password (and its
// connections killed) when the lease ends (rekeyAccount), so a former
// holder's credentials stop working at release, then handed to the next
// holder or dropped with its server.
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
	a := account{user: "lease_" + randomHex(6), password: rand.Text()}
	var maxConn int
	var secure bool
	if err := admin.QueryRowContext(ctx, "SELECT @@GLOBAL.max_connections, @@GLOBAL.require_secure_transport").Scan(&maxConn, &secure); err != nil {
		return account{}, fmt.Errorf("create lease account: read max_connections: %w", err)
	}
	// A server reachable from other machines requires TLS of every TCP
	// connection (mariadb.TLS); the lease account requires it as well,
	// whatever the server's options become (docs/security.md, "Network").
	require := ""
	if secure {
		require = " REQUIRE SSL"
	}
	qs := []string{"CREATE USER " + quote.Account(a.user, "%") + " IDENTIFIED BY " + quote.String(a.password) + require +
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

// rekeyAccount hands a unit's lease account to the next holder: one
// ALTER USER ... IDENTIFIED BY gives it a new password (one statement
// where dropping it and making a new one are seven; on MySQL each is a
// data dictionary transaction, and caching_sha2_password forgets the
// account's cached login). It is the first thing a reset does: from then
// on a handshake with the old password, or one the holder set itself, is
// refused, and the connections that got in before are killed next. The
// name, grants and connection limit stay; the callers reset the slot in
// full when the checks that follow find that the holder ran an account
// statement (they move the counters the checks compare).
func rekeyAccount(ctx context.Context, admin querier, old account) (account, error) {
	a := account{user: old.user, password: rand.Text()}
	if _, err := admin.ExecContext(ctx, "ALTER USER "+quote.Account(a.user, "%")+" IDENTIFIED BY "+quote.String(a.password)); err != nil {
		return account{}, fmt.Errorf("give lease account %s a new password: %w", a.user, err)
	}
	return a, nil
}

// adminReserve is how many of a server's max_connections a lease account
// leaves to pristine: its admin's pool (up to two connections) and its
// purge wakes (up to two, maxWakes). A root session for debugging has the
// connection a server keeps beyond max_connections for an administrator.
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
// root of its slot. On `performance_schema` it has SELECT only: with the
// wildcard's UPDATE, INSERT and DROP a MySQL lease could turn off the
// table I/O instrumentation (its setup tables, a thread's INSTRUMENTED)
// or TRUNCATE its counters, which the in-place reset reads
// (mariadb.Changes). With several databases per slot, every privilege on
// its own database only.
func LeaseGrants(db string, shared bool) []string {
	if shared {
		return []string{"ALL PRIVILEGES ON " + quote.Ident(db) + ".*"}
	}
	return []string{
		"ALL PRIVILEGES ON `%`.*",
		"SHOW VIEW ON `mysql`.*",
		"SHOW VIEW ON `sys`.*",
		"SELECT ON `performance_schema`.*",
	}
}

// writeCounterNames are the status variables (upper case), besides every
// COM_CREATE_, COM_DROP_, COM_ALTER_ and COM_RENAME_ one but those of
// temporary tables (which die with their connection), whose sum moves when
// anything is written on a server of flavour f: its row write counters
// (mariadb.Changes: on MariaDB the InnoDB log sequence number and
// Handler_write/update/delete, on MySQL the write statements' counters),
// and the account, truncate and plugin statements. Global variables are
// hashed apart (globalsHash), though lease accounts cannot change them (no
// global privileges, see LeaseGrants). Every name listed exists on its
// flavour's server (TestWriteMarkCounters). SET PASSWORD has no counter
// of its own in MariaDB 10.11; its write to the grant tables moves
// Handler_update.
func writeCounterNames(f mariadb.Flavor) []string {
	c := f.Changes()
	names := []string{"COM_TRUNCATE", "COM_GRANT", "COM_REVOKE", "COM_REVOKE_ALL", "COM_INSTALL_PLUGIN", "COM_UNINSTALL_PLUGIN"}
	return append(append(names, c.OtherWrites...), c.RowWrites...)
}

// writeCounterPrefixes start the names of the statement counters of DDL
// (isWriteCounter; temporary tables' aside).
var writeCounterPrefixes = []string{"COM_CREATE_", "COM_DROP_", "COM_ALTER_", "COM_RENAME_"}

// isWriteCounter tells whether the status variable name (upper case) is
// one of the write counters (writeCounterNames) of flavour f.
func isWriteCounter(name string, f mariadb.Flavor) bool {
	if name == "COM_CREATE_TEMPORARY_TABLE" || name == "COM_DROP_TEMPORARY_TABLE" {
		return false
	}
	for _, p := range writeCounterPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains(writeCounterNames(f), name)
}

// writeMark reads the slot's write counters and a hash of its global
// variables (poolGlobals g, the slot's directories being dirs), as one
// string, with the counters it read (readCounters). A fresh slot's hash
// is the pool's, read by its first fresh slot only.
func writeMark(ctx context.Context, admin querier, f mariadb.Flavor, dirs []string, g *poolGlobals, fresh bool) (string, map[string]string, error) {
	status, counters, err := readCounters(ctx, admin, f)
	if err != nil {
		return "", nil, err
	}
	var globals string
	if fresh {
		globals, err = g.freshHash(ctx, admin, dirs)
	} else {
		globals, err = g.hash(ctx, admin, dirs)
	}
	if err != nil {
		return "", nil, err
	}
	return counters + " " + globals, status, nil
}

// withCounters is mark with its write counters replaced.
func withCounters(mark, counters string) string {
	return counters + " " + markGlobals(mark)
}

// markGlobals is the global variables' hash of mark.
func markGlobals(mark string) string {
	_, globals, _ := strings.Cut(mark, " ")
	return globals
}

// readCounters reads the server's counters of statusCounters (the in-place
// baseline's, baseFrom) and returns them with the sum of its write
// counters (isWriteCounter).
func readCounters(ctx context.Context, admin querier, f mariadb.Flavor) (map[string]string, string, error) {
	status, err := mariadb.ReadStatus(ctx, admin, "GLOBAL", statusCounters[f])
	if err != nil {
		return nil, "", err
	}
	n, err := sumWrites(status, f)
	return status, strconv.FormatUint(n, 10), err
}

// sumWrites sums the write counters of status.
func sumWrites(status map[string]string, f mariadb.Flavor) (uint64, error) {
	var sum uint64
	for name, value := range status {
		if !isWriteCounter(name, f) {
			continue
		}
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read write counters: %s=%q is not a count", name, value)
		}
		sum += n
	}
	return sum, nil
}
