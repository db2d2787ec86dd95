package mariadb

import (
	"slices"
	"testing"
)

// Slots commit to the page cache at every commit; builds, which are thrown
// away when killed, about once a second.
func TestProfileCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Profile
		want string
	}{
		{"slot", DefaultProfile(), "--innodb-flush-log-at-trx-commit=2"},
		{"build", BuildProfile(DefaultProfile()), "--innodb-flush-log-at-trx-commit=0"},
		{"zero profile", Profile{}, "--innodb-flush-log-at-trx-commit=2"},
	} {
		if args := tc.p.args(MariaDB); !slices.Contains(args, tc.want) {
			t.Errorf("%s profile: %v lacks %s", tc.name, args, tc.want)
		}
	}
}
