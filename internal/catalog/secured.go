package catalog

import (
	"errors"
	"fmt"
)

// AccountsVersion marks data directories whose accounts were secured: root
// only at localhost with the root's admin secret, no anonymous account,
// the build account locked. Templates without it were made by an older
// pristine and are refused (ErrInsecure).
const AccountsVersion = "secured-1"

// ErrInsecure is wrapped by CheckSecured's error.
var ErrInsecure = errors.New("template made by an older pristine")

// CheckSecured refuses a template whose accounts were not secured: its
// root account has no password and its files may belong to root.
func CheckSecured(m *Meta) error {
	if m.Accounts == AccountsVersion {
		return nil
	}
	return fmt.Errorf("%w: template %s (%s) has a root account without a password: remove it (pristine template rm %s) and build or import it again", ErrInsecure, m.Name, shortHash(m.Hash), m.Hash)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
