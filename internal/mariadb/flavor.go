package mariadb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// What differs between MariaDB and MySQL (8.0.30 and later: 8.4 LTS, 9.x)
// lives here: server options, and the names of what pristine reads from a
// running server. The rest of the package, and pristine, go through the
// same code for both.

// mariadbArgs are the options of the profile only MariaDB knows or spells
// this way.
func (p Profile) mariadbArgs() []string {
	return []string{
		"--innodb-log-file-size=" + strconv.FormatInt(p.LogFileSize, 10),
		"--innodb-flush-method=nosync",
		"--innodb-purge-threads=1",
		"--aria-pagecache-buffer-size=" + strconv.FormatInt(p.AriaCache, 10),
		"--loose-aria-recover-options=OFF",
		"--loose-innodb-change-buffering=none",
		"--loose-skip-slave-start",
	}
}

// mysqlArgs are MySQL's spellings and its own options. MySQL sizes its
// redo log by innodb_redo_log_capacity (innodb_log_file_size is gone in
// 9.x) and keeps it in #innodb_redo as 32 files of capacity/32, all
// written out: the capacity is the profile's log size (MariaDB's one log
// file), at least MySQL's 8 MiB minimum.
// No X Protocol listener (mysqlx): one socket and one port per slot. No
// Aria, no flush method without fsync (O_DIRECT_NO_FSYNC is the nearest).
func (p Profile) mysqlArgs() []string {
	return []string{
		"--innodb-redo-log-capacity=" + strconv.FormatInt(max(p.LogFileSize, 8<<20), 10),
		"--innodb-flush-method=O_DIRECT_NO_FSYNC",
		"--innodb-purge-threads=1",
		"--mysqlx=OFF",
		"--skip-replica-start",
	}
}

// StatusTable is the table of global status variables: MySQL moved it
// from information_schema to performance_schema (which answers even with
// performance_schema=0).
func (f Flavor) StatusTable() string {
	if f == MySQL {
		return "performance_schema.global_status"
	}
	return "information_schema.GLOBAL_STATUS"
}

// LSNStatus is the name (upper case) of the status variable that holds
// InnoDB's current log sequence number.
func (f Flavor) LSNStatus() string {
	if f == MySQL {
		return "INNODB_REDO_LOG_CURRENT_LSN"
	}
	return "INNODB_LSN_CURRENT"
}

// ForgetIdentity removes what makes a stopped data directory one
// particular server, so that every clone of it is a server of its own:
// MySQL keeps its server_uuid in auto.cnf and makes a new one at start
// when the file is missing (replication and the clone plugin refuse two
// servers with one uuid). MariaDB writes no auto.cnf.
func (b *Binary) ForgetIdentity(datadir string) error {
	if b.Flavor != MySQL {
		return nil
	}
	if err := os.Remove(filepath.Join(datadir, "auto.cnf")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the server_uuid of %s: %w", datadir, err)
	}
	return nil
}

// mysqlClients are MySQL's names of MariaDB's client programs.
var mysqlClients = map[string]string{"mariadb": "mysql", "mariadb-dump": "mysqldump", "mariadb-admin": "mysqladmin"}

// Client is the name of the flavour's client program for a MariaDB name
// (mariadb, mariadb-dump, mariadb-admin): MySQL ships them as mysql,
// mysqldump and mysqladmin.
func (b *Binary) Client(name string) string {
	if alt, ok := mysqlClients[name]; ok && b != nil && b.Flavor == MySQL {
		return alt
	}
	return name
}
