package catalog

import (
	"errors"
	"testing"
)

// TestCheckSecured: only templates secured by this pristine's rules are
// served; a MySQL template from before the definer pass had a MySQL
// flavour (it says secured-2 but warned that its DEFINERs were kept) is
// refused like an older one.
func TestCheckSecured(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Meta
		ok   bool
	}{
		{"secured-2", Meta{Accounts: AccountsVersion}, true},
		{"secured-2 with another warning", Meta{Accounts: AccountsVersion, Warnings: []string{"app.orphan.fk_gone (g) references app.ghost(id)"}}, true},
		{"secured-1", Meta{Accounts: "secured-1"}, false},
		{"none", Meta{}, false},
		{"MySQL, DEFINERs kept", Meta{Accounts: AccountsVersion, Warnings: []string{UnsecuredDefinersWarning + ": on MySQL, objects of root ..."}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.m.Name, c.m.Hash = "app", "sha256:0123456789abcdef"
			err := CheckSecured(&c.m)
			if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInsecure)) {
				t.Errorf("CheckSecured = %v, want ok=%v (or ErrInsecure)", err, c.ok)
			}
		})
	}
}
