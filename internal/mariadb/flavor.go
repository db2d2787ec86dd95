package mariadb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pristinedb/pristine/internal/svcuser"
)

// What differs between MariaDB and MySQL (8.0.30 and later: 8.4 LTS, 9.x)
// lives here: server options, and the names of what pristine reads from a
// running server. The rest of the package, and pristine, go through the
// same code for both.

// mariadbArgs are the options of the profile only MariaDB knows or spells
// this way. log_warnings=1: at MariaDB's default of 2 every refused login
// ("Access denied for user", about 100 bytes) is written to the error log,
// so anyone who reaches a server's port could fill the disk with it
// (docs/security.md, "Logs are capped"); at 1 errors and warnings still
// are.
func (p Profile) mariadbArgs() []string {
	return []string{
		"--log-warnings=1",
		"--innodb-log-file-size=" + strconv.FormatInt(p.LogFileSize, 10),
		"--innodb-purge-threads=1",
		"--aria-pagecache-buffer-size=" + strconv.FormatInt(p.AriaCache, 10),
		"--loose-aria-recover-options=OFF",
		"--loose-innodb-change-buffering=none",
		"--loose-skip-slave-start",
	}
}

// mysqlMinRedo is the smallest innodb_redo_log_capacity MySQL takes.
const mysqlMinRedo = 8 << 20

// mysqlArgs are MySQL's spellings and its own options. MySQL sizes its
// redo log by innodb_redo_log_capacity (innodb_log_file_size is gone in
// 9.x) and keeps it in #innodb_redo as 32 files of capacity/32, which it
// writes out in full at every start: builds use the profile's log size
// (MariaDB's one log file), slots MySQL's 8 MiB minimum (MySQLRedo), which
// cuts what a slot's start writes into its clone from about 57 MiB to 20
// (docs/benchmarks.md, "The server matrix"). MySQL resizes the redo log of
// a template built with a larger one as it starts.
// innodb_validate_tablespace_paths=OFF: a clone's tablespaces are where
// the template's data dictionary says (pristine never moves them), so the
// start need not open every one to check.
// No X Protocol listener (mysqlx): one socket and one port per slot. No
// Aria.
// log_error_verbosity=2 (errors and warnings, MySQL's default, pinned):
// at 2 MySQL 9.7 does not log a refused login (docs/security.md, "Logs
// are capped"). MY-013360, "'sha256_password' is deprecated", is not
// logged: MySQL logs it at every login through that plugin, and it
// answers a login of an account that does not exist as if the account
// used a plugin it draws at random per user name, sha256_password among
// them, so a flood of logins as unknown users would add a line each.
func (p Profile) mysqlArgs() []string {
	redo := p.MySQLRedo
	if redo <= 0 {
		redo = p.LogFileSize
	}
	return []string{
		"--innodb-redo-log-capacity=" + strconv.FormatInt(max(redo, mysqlMinRedo), 10),
		"--innodb-purge-threads=1",
		"--innodb-validate-tablespace-paths=OFF",
		"--mysqlx=OFF",
		"--skip-replica-start",
		"--log-error-verbosity=2",
		"--log-error-suppression-list=MY-013360",
		// caching_sha2_password hashes a new password, and a login's
		// before the server caches it, in as many SHA-256 rounds as this:
		// 10,000 by default on MySQL 9, each hash 1.6-2.1 ms of the
		// server's CPU, twice per lease (the account's new password and
		// its first login, Instance.WarmLogin). Lease passwords are
		// random (rand.Text: 128 bits), which more rounds do not protect
		// further; 5,000 is the least the server takes.
		"--caching-sha2-password-digest-rounds=5000",
	}
}

// ownCertificate gives a server that makes a TLS certificate of its own
// at every start when none is configured (Config.TLS nil) one made by
// pristine instead, and returns the options that use it. MariaDB 11.4 and
// later generate a self-signed certificate at start, which was 0.45-0.65 s
// of the 0.5-0.7 s of CPU a MariaDB 11.8 slot took to start here, against
// 20-60 ms with a certificate given (docs/benchmarks.md, "The server
// matrix"). pristine's is self-signed as well (an ECDSA P-256 key, made in
// well under a millisecond), one per server, written 0600 into its run
// directory and its account's, so TLS stays on by default as 11.4 has it
// and its clients verify it as they verify the server's own (by the
// password exchange, for the MitM-safe authentication plugins). TCP
// connections without TLS are still taken, as before.
func (b *Binary) ownCertificate(acct svcuser.Account, run string) ([]string, error) {
	if b.Flavor != MariaDB || b.Major < 11 || b.Major == 11 && b.Minor < 4 {
		return nil, nil
	}
	cert, key, err := selfSigned()
	if err != nil {
		return nil, fmt.Errorf("make the server's TLS certificate: %w", err)
	}
	var args []string
	for i, pem := range [][]byte{cert, key} {
		path := filepath.Join(run, tlsFiles[i+1])
		if err := writeOwned(acct, path, pem); err != nil {
			return nil, fmt.Errorf("write the server's TLS files: %w", err)
		}
		args = append(args, "--"+[]string{"ssl-cert", "ssl-key"}[i]+"="+path)
	}
	return args, nil
}

// selfSigned makes a self-signed server certificate for localhost and
// 127.0.0.1 with an ECDSA P-256 key, as PEM.
func selfSigned() (cert, key []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "pristine slot"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(20, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
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

// TimezoneLoaders are the names of the flavour's loader of time zone
// tables from the system's zoneinfo, in the order tried: MariaDB's
// mariadb-tzinfo-to-sql (or its older name), MySQL's own
// mysql_tzinfo_to_sql, whose output fits MySQL's InnoDB time zone tables
// (MariaDB's is not used there: it writes MariaDB's statements).
func (b *Binary) TimezoneLoaders() []string {
	if b != nil && b.Flavor == MySQL {
		return []string{"mysql_tzinfo_to_sql"}
	}
	return []string{"mariadb-tzinfo-to-sql", "mysql_tzinfo_to_sql"}
}

// mysqlClients are MySQL's names of MariaDB's client programs.
var mysqlClients = map[string]string{"mariadb": "mysql", "mariadb-dump": "mysqldump", "mariadb-admin": "mysqladmin"}

// Client is the name of the binary's client program for a MariaDB name
// (Flavor.Client).
func (b *Binary) Client(name string) string {
	if b == nil {
		return name
	}
	return b.Flavor.Client(name)
}
