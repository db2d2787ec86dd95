package pool

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A lease's option file lets MariaDB's own clients (mariadb, mariadb-dump,
// mariadb-admin) connect to its database with no flags: the lease's
// environment sets MYSQL_HOME to the file's directory, and the clients read
// $MYSQL_HOME/my.cnf after /etc/my.cnf and /etc/mysql/my.cnf (and before
// ~/.my.cnf). The file is 0600 and removed when the lease ends.

// optionDir is the directory of a lease's option file.
func (p *Pool) optionDir(id string) string {
	return filepath.Join(p.run, "leases", id)
}

// optionFileText is a lease's my.cnf: the connection in [client], which
// every client reads, and the database in [mysql] and [mariadb-client], the
// groups of the mariadb client only (mariadb-dump would read a database
// option as its --databases flag).
func optionFileText(l *Lease) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# pristine lease %s (template %s, slot %d): removed when the lease ends\n", l.ID, l.Template, l.Slot)
	if l.CA == "" {
		fmt.Fprintf(&b, "[client]\nuser=%s\npassword=%s\nsocket=%s\nport=%s\n", optionValue(l.User), optionValue(l.Password), optionValue(l.Socket), strconv.Itoa(l.Port))
	} else {
		// A slot reachable over the network: TCP with TLS, the server's
		// certificate verified against the lease's CA (ca.pem beside
		// this file). MariaDB's clients also check its name
		// (ssl-verify-server-cert, in the group only they read); MySQL's
		// verify the CA (ssl-ca without ssl-mode means VERIFY_CA).
		fmt.Fprintf(&b, "[client]\nuser=%s\npassword=%s\nhost=%s\nport=%s\nprotocol=TCP\nssl-ca=%s\n[client-mariadb]\nssl-verify-server-cert\n",
			optionValue(l.User), optionValue(l.Password), optionValue(l.Host), strconv.Itoa(l.Port), optionValue(filepath.Join(filepath.Dir(l.OptionFile), "ca.pem")))
	}
	for _, group := range []string{"mysql", "mariadb-client"} {
		fmt.Fprintf(&b, "[%s]\ndatabase=%s\n", group, optionValue(l.Database))
	}
	return b.String()
}

// optionValue quotes a value for an option file.
func optionValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// writeOptionFile writes a lease's option file. No client can know its
// path before the lease is handed out, so it is written in place.
func (p *Pool) writeOptionFile(l *Lease) error {
	dir := p.optionDir(l.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if !os.IsNotExist(err) {
			return fmt.Errorf("lease %s: option file: %w", l.ID, err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil { // the first lease of the pool
			return fmt.Errorf("lease %s: option file: %w", l.ID, err)
		}
	}
	if l.CA != "" {
		if err := os.WriteFile(filepath.Join(dir, "ca.pem"), []byte(l.CA), 0o600); err != nil {
			return fmt.Errorf("lease %s: option file: %w", l.ID, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "my.cnf"), []byte(optionFileText(l)), 0o600); err != nil {
		return fmt.Errorf("lease %s: option file: %w", l.ID, err)
	}
	return nil
}

// removeOptionFile removes a lease's option file and its directory.
func (p *Pool) removeOptionFile(id string) {
	if id != "" {
		_ = os.RemoveAll(p.optionDir(id))
	}
}
