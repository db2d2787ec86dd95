package rootdir

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SecretName is the file under the root that holds the admin secret.
const SecretName = "admin.secret"

// AdminSecret returns the password of root@localhost in every data
// directory of this root (see docs/security.md), creating it on first use:
// 128 random bits in hex, in <root>/admin.secret, mode 0600. It is written
// to a temporary file and hard-linked into place, so concurrent first uses
// agree on one secret. It is never logged and never put in argv.
func (r *Root) AdminSecret() (string, error) {
	path := filepath.Join(r.Path, SecretName)
	if s, err := readSecret(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	tmp, err := os.CreateTemp(r.Path, SecretName+".tmp*")
	if err != nil {
		return "", fmt.Errorf("admin secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(rand.Text() + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("admin secret: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("admin secret: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("admin secret: %w", err)
	}
	return readSecret(path)
}

func readSecret(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("admin secret %s: mode %v: it must be a regular file readable by its owner only: chmod 600 %s", path, st.Mode(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("admin secret: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if len(s) < 16 {
		return "", fmt.Errorf("admin secret %s is too short: remove it only together with every template and pool of this root", path)
	}
	return s, nil
}
