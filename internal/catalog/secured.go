package catalog

import (
	"errors"
	"fmt"
	"strings"
)

// AccountsVersion marks data directories whose accounts were secured: root
// only at localhost with the root's admin secret, no anonymous account,
// the build account locked (secured-1), and no view, trigger, routine or
// event running as an administrative account or with a global privilege
// (secured-2: the build re-owns them by the template's owner account;
// docs/security.md, "No definer gadget"). Templates without it were made
// by an older pristine and are refused (ErrInsecure); a build or import of
// the same inputs replaces them.
const AccountsVersion = "secured-2"

// baseAccountsVersion is what a base data directory's accounts were
// secured to: a base holds no object of the template's, so the DEFINER
// rules of secured-2 leave it as it was and it is not made again.
const baseAccountsVersion = "secured-1"

// UnsecuredDefinersWarning begins the warning a MySQL build made before the
// definer pass had a MySQL flavour: its objects kept their DEFINERs.
const UnsecuredDefinersWarning = "DEFINERs not secured"

func unsecuredDefiners(m *Meta) bool {
	for _, w := range m.Warnings {
		if strings.HasPrefix(w, UnsecuredDefinersWarning) {
			return true
		}
	}
	return false
}

// ErrInsecure is wrapped by CheckSecured's error.
var ErrInsecure = errors.New("template made by an older pristine")

// Definers records what a build did to the DEFINERs of its objects
// (mariadb.SecureDefiners): verify reports these as known differences.
type Definers struct {
	// Owner is the owner account, user@host.
	Owner string `json:"owner"`
	// Reowned are the objects given to Owner, "kind `schema`.`name` (was
	// user@host)".
	Reowned []string `json:"reowned,omitempty"`
	// Reduced are the DEFINERs (and roles they can set) whose global
	// privileges and privileges on mysql were taken.
	Reduced []string `json:"reduced,omitempty"`
	// Dropped are views of administrative accounts that could not be
	// re-owned (they name missing tables) and were dropped.
	Dropped []string `json:"dropped,omitempty"`
}

// CheckSecured refuses a template whose accounts were not secured by this
// pristine's rules: an older one's may have a root account without a
// password, or objects that run as root in every slot.
//
// A MySQL template built before the definer pass had a MySQL flavour says
// secured-2 but kept its DEFINERs, and recorded the warning
// UnsecuredDefinersWarning: it is refused (and rebuilt) too.
func CheckSecured(m *Meta) error {
	if m.Accounts == AccountsVersion && !unsecuredDefiners(m) {
		return nil
	}
	return fmt.Errorf("%w: template %s (%s) was secured by older rules (its root account may have no password, its views, triggers and routines may run as root in every slot): remove it (pristine template rm %s) and build or import it again", ErrInsecure, m.Name, shortHash(m.Hash), m.Hash)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
