package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The server dialect: how MariaDB and MySQL differ, as capabilities of a
// Flavor (what the server has or how it spells a thing), never as a test
// of which server it is. The flavour is decided once: from the installed
// binary (Binary.Flavor, by FindBinary) or, for a live server pristine did
// not start (a capture's source, a build's target), by the first probe of
// it (FlavorOf of its version, or Probe). Every other package asks the
// Flavor; TestFlavorChecksStayInMariadb (layout_test.go) fails on a
// flavour check outside this package. docs/architecture.md, "Server
// dialects", lists what the flavour decides.

// Flavors are the server flavours pristine knows, in a fixed order.
func Flavors() []Flavor { return []Flavor{MariaDB, MySQL} }

// FlavorOf is the flavour of a server from its version string (SELECT
// VERSION(), @@version): MariaDB's versions name it ("10.11.19-MariaDB-
// 0+deb12u1"), MySQL's do not ("9.7.0"). An empty version is no flavour
// (""), which every capability answers as MariaDB.
func FlavorOf(version string) Flavor {
	switch {
	case version == "":
		return ""
	case strings.Contains(strings.ToLower(version), "mariadb"):
		return MariaDB
	default:
		return MySQL
	}
}

// RowQueryer is a *sql.DB, *sql.Conn or *sql.Tx.
type RowQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Probe asks a live server its version and returns its flavour: the one
// probe of a server pristine did not start.
func Probe(ctx context.Context, q RowQueryer) (Flavor, error) {
	var v string
	if err := q.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return "", fmt.Errorf("read the server version: %w", err)
	}
	return FlavorOf(v), nil
}

// Name is the server's product name, for people: "MariaDB" or "MySQL".
func (f Flavor) Name() string {
	if f == MySQL {
		return "MySQL"
	}
	return "MariaDB"
}

// Client is the name of the flavour's client program for a MariaDB name
// (mariadb, mariadb-dump, mariadb-admin): MySQL ships them as mysql,
// mysqldump and mysqladmin.
func (f Flavor) Client(name string) string {
	if alt, ok := mysqlClients[name]; ok && f == MySQL {
		return alt
	}
	return name
}

// SlotMemory is what one slot's server takes beyond its buffer pool, for
// the memory check of a pool before it comes up. MariaDB 10.11: about
// 50 MB resident when idle, 29 MiB of it anonymous. MySQL 9.7: 84-91 MB
// (PSS) idle, up to 116 MB anonymous while it starts (the data
// dictionary), and 21 MB of its clone rewritten at start (the redo log and
// ibtmp1), held in RAM on a RAM-backed scratch filesystem; with the
// MariaDB figure, 187 MySQL slots of 200 came up on 23.5 GiB before the
// kernel killed one for memory.
func (f Flavor) SlotMemory() int64 {
	if f == MySQL {
		return 120 << 20
	}
	return 40 << 20
}

// ClonePlugin reports whether a physical copy of a live server of this
// flavour is made by MySQL's clone plugin (CLONE INSTANCE FROM, into a
// recipient server pristine starts), which copies the whole instance:
// every database of the source, its InnoDB counters with them.
func (f Flavor) ClonePlugin() bool { return f == MySQL }

// MariadbBackup reports whether a physical copy of a live server of this
// flavour is made by mariadb-backup from its data directory.
func (f Flavor) MariadbBackup() bool { return f == MariaDB }

// LocalInfileOff reports whether the server refuses LOAD DATA LOCAL until
// local_infile is set ON (MySQL's default is OFF).
func (f Flavor) LocalInfileOff() bool { return f == MySQL }

// SequenceEngine reports whether the server has MariaDB's SEQUENCE
// engine (seq_1_to_N tables), which the demo schema numbers rows from.
func (f Flavor) SequenceEngine() bool { return f != MySQL }

// PasswordByAlterUser reports whether an account's password is replaced
// by ALTER USER ... IDENTIFIED BY, which reaches every account (MySQL has
// neither mysql.global_priv nor PASSWORD()). When false, the password is
// written into the account's mysql.global_priv row: an account the server
// ignores (a host name under --skip-name-resolve) cannot be changed by
// ALTER USER there.
func (f Flavor) PasswordByAlterUser() bool { return f == MySQL }

// CachesLogins reports whether the server remembers an account's
// successful login and checks its next logins against that memory:
// MySQL's caching_sha2_password, its default authentication plugin.
// Until an account has logged in once, a login over TCP without TLS costs
// an RSA key exchange (the client asks for the server's public key) and
// the full hash of the password, on the server's CPU (Instance.WarmLogin).
func (f Flavor) CachesLogins() bool { return f == MySQL }

// HexHashesStatement is the session statement that makes SHOW CREATE
// USER print password hashes as hex, which CREATE USER takes back (MySQL's
// hashes are binary), or "" where they are text already.
func (f Flavor) HexHashesStatement() string {
	if f == MySQL {
		return "SET SESSION print_identified_with_as_hex = ON"
	}
	return ""
}

// GrantTable is a table of the mysql schema that names accounts, by the
// columns that hold an account's user and host.
type GrantTable struct{ Name, User, Host string }

// GrantTables are the flavour's table of accounts (one row per account
// and role) and every grant table that names an account, each pair of
// user and host columns once: MariaDB keeps accounts in mysql.global_priv
// and roles in roles_mapping; MySQL keeps accounts in mysql.user, dynamic
// privileges in global_grants, roles in role_edges and default_roles.
func (f Flavor) GrantTables() (accounts string, tables []GrantTable) {
	if f == MySQL {
		return "user", []GrantTable{{"user", "User", "Host"}, {"db", "User", "Host"}, {"tables_priv", "User", "Host"},
			{"columns_priv", "User", "Host"}, {"procs_priv", "User", "Host"}, {"proxies_priv", "User", "Host"},
			{"global_grants", "USER", "HOST"}, {"role_edges", "FROM_USER", "FROM_HOST"}, {"role_edges", "TO_USER", "TO_HOST"},
			{"default_roles", "USER", "HOST"}, {"default_roles", "DEFAULT_ROLE_USER", "DEFAULT_ROLE_HOST"}, {"password_history", "User", "Host"}}
	}
	return "global_priv", []GrantTable{{"global_priv", "User", "Host"}, {"db", "User", "Host"}, {"tables_priv", "User", "Host"},
		{"columns_priv", "User", "Host"}, {"procs_priv", "User", "Host"}, {"proxies_priv", "User", "Host"}, {"roles_mapping", "User", "Host"}}
}

// RolesByName reports whether a role is named by its bare name, with an
// empty host, and is not an account (MariaDB): SHOW CREATE USER does not
// know it, and its grants to accounts are rows of mysql.roles_mapping
// whose Role column names it. MySQL's roles are accounts (user@host),
// granted by mysql.role_edges.
func (f Flavor) RolesByName() bool { return f != MySQL }

// AccountsQuery lists the server's accounts and roles from the mysql
// schema: user, host, and Y for a role. MariaDB marks its roles in
// mysql.user's is_role; MySQL has no such column, and a role there is an
// account granted to another (mysql.role_edges).
func (f Flavor) AccountsQuery() string {
	if f == MySQL {
		return `SELECT User, Host, IF(EXISTS(SELECT 1 FROM mysql.role_edges e
		 WHERE e.FROM_USER = u.User AND e.FROM_HOST = u.Host), 'Y', 'N') FROM mysql.user u`
	}
	return "SELECT User, Host, is_role FROM mysql.user"
}

// RoleGrantsQuery lists the roles granted to accounts: grantee user and
// host, then the role's user and host (MariaDB's roles have no host: "").
func (f Flavor) RoleGrantsQuery() string {
	if f == MySQL {
		return "SELECT TO_USER, TO_HOST, FROM_USER, FROM_HOST FROM mysql.role_edges"
	}
	return "SELECT User, Host, Role, '' FROM mysql.roles_mapping"
}

// EventDefinersQuery selects the DEFINER of the events in the schemas of
// in, a parenthesised list of quoted names. MariaDB's are read from
// mysql.event, since its information_schema.EVENTS fails while the event
// scheduler is off (a copy started with --skip-grant-tables); MySQL 8 and
// later have no mysql.event.
func (f Flavor) EventDefinersQuery(in string) string {
	if f == MySQL {
		return "SELECT DEFINER FROM information_schema.EVENTS WHERE EVENT_SCHEMA IN " + in
	}
	return "SELECT definer FROM mysql.event WHERE db IN " + in
}

// ChecksumTableStable reports whether CHECKSUM TABLE ... EXTENDED gives
// equal rows equal sums. MySQL's reads the stored record, which holds the
// buffers of hidden and virtual columns as they happen to be and JSON in
// its binary form: equal rows can sum differently there, so a comparison
// of data digests the rows' values itself.
func (f Flavor) ChecksumTableStable() bool { return f != MySQL }

// GTIDBinlogPos reports whether the server's change marker with binary
// logging on is @@gtid_binlog_pos (MariaDB's GTIDs). Else it is MySQL's
// @@gtid_executed, or with GTIDs off the binary log's file and position.
func (f Flavor) GTIDBinlogPos() bool { return f != MySQL }

// ColumnsQuery reads a table's columns from information_schema.COLUMNS in
// order, the table's schema and name as its two arguments: name, data
// type, key, and ALWAYS for a generated column, else NEVER. MariaDB has
// IS_GENERATED; MySQL has not, and its EXTRA says VIRTUAL GENERATED or
// STORED GENERATED (DEFAULT_GENERATED is a stored column with an
// expression default).
func (f Flavor) ColumnsQuery() string {
	if f == MySQL {
		return `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_KEY,
		 IF(EXTRA LIKE '%VIRTUAL GENERATED%' OR EXTRA LIKE '%STORED GENERATED%', 'ALWAYS', 'NEVER')
		 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=? AND TABLE_NAME=? ORDER BY ORDINAL_POSITION`
	}
	return `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_KEY, IS_GENERATED
	 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=? AND TABLE_NAME=? ORDER BY ORDINAL_POSITION`
}
