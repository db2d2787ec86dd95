package mariadb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/svcuser"
)

// TLS is what a server needs to serve TLS: its certificate and key and
// the CA that issued them, as PEM (tlsca.CA.Issue).
type TLS struct {
	CA, Cert, Key []byte
}

// tlsFiles are the names of the TLS files in a server's run directory.
var tlsFiles = [3]string{"tls-ca.pem", "tls-cert.pem", "tls-key.pem"}

// install writes the TLS files into the server's run directory, 0600 and
// its account's (the key never reaches another slot's server), and
// returns the server options that use them. Both flavours spell them
// alike: ssl-ca/ssl-cert/ssl-key and require_secure_transport (MariaDB
// 10.5.2 and later, MySQL 5.7 and later), which refuses every TCP
// connection without TLS, whatever the account.
func (t *TLS) install(acct svcuser.Account, run string) ([]string, error) {
	var args []string
	for i, b := range [][]byte{t.CA, t.Cert, t.Key} {
		path := filepath.Join(run, tlsFiles[i])
		if err := writeOwned(acct, path, b); err != nil {
			return nil, fmt.Errorf("write the server's TLS files: %w", err)
		}
		args = append(args, "--"+[]string{"ssl-ca", "ssl-cert", "ssl-key"}[i]+"="+path)
	}
	return append(args, "--require-secure-transport=ON"), nil
}

// writeOwned writes b to a new file at path, 0600 and the account's. The
// run directory is the server's: whatever is at path goes first, and the
// new file is made without following a symlink (O_EXCL|O_NOFOLLOW).
func writeOwned(acct svcuser.Account, path string, b []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if acct.Drop {
		if err := f.Chown(acct.UID, acct.GID); err != nil {
			return err
		}
	}
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Close()
}
