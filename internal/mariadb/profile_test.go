package mariadb

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/svcuser"
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
		if args := tc.p.args(&Binary{Flavor: MariaDB}); !slices.Contains(args, tc.want) {
			t.Errorf("%s profile: %v lacks %s", tc.name, args, tc.want)
		}
	}
}

// MySQL slots run at the smallest redo log MySQL takes (it writes the whole
// log out at every start); builds keep the template's log size.
func TestProfileMySQLRedo(t *testing.T) {
	slot := DefaultProfile()
	for _, tc := range []struct {
		name string
		p    Profile
		want string
	}{
		{"slot", slot, "--innodb-redo-log-capacity=8388608"},
		{"build", BuildProfile(slot), "--innodb-redo-log-capacity=50331648"},
		{"zero profile", Profile{}, "--innodb-redo-log-capacity=8388608"},
		{"build of a small log", BuildProfile(Profile{LogFileSize: 4 << 20}), "--innodb-redo-log-capacity=8388608"},
	} {
		if args := tc.p.args(&Binary{Flavor: MySQL}); !slices.Contains(args, tc.want) {
			t.Errorf("%s profile: %v lacks %s", tc.name, args, tc.want)
		}
	}
	for _, a := range slot.args(&Binary{Flavor: MariaDB}) {
		if strings.Contains(a, "redo") || strings.Contains(a, "validate-tablespace") {
			t.Errorf("MariaDB gets MySQL's option %s", a)
		}
	}
}

// Only MariaDB 11.4 and later make a TLS certificate at start; they get
// one of pristine's, a self-signed certificate for loopback, 0600 in the
// run directory, when pristine configures no TLS.
func TestOwnCertificate(t *testing.T) {
	acct := svcuser.Account{Name: "test", UID: os.Getuid(), GID: os.Getgid()}
	for _, tc := range []struct {
		b    Binary
		want bool
	}{
		{Binary{Flavor: MariaDB, Major: 10, Minor: 11}, false},
		{Binary{Flavor: MariaDB, Major: 11, Minor: 3}, false},
		{Binary{Flavor: MariaDB, Major: 11, Minor: 4}, true},
		{Binary{Flavor: MariaDB, Major: 11, Minor: 8}, true},
		{Binary{Flavor: MariaDB, Major: 12, Minor: 0}, true},
		{Binary{Flavor: MySQL, Major: 9, Minor: 7}, false},
	} {
		run := t.TempDir()
		args, err := tc.b.ownCertificate(acct, run)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(args) > 0; got != tc.want {
			t.Fatalf("%s %d.%d: options %v, want a certificate: %v", tc.b.Flavor, tc.b.Major, tc.b.Minor, args, tc.want)
		}
		if !tc.want {
			continue
		}
		certPEM, err := os.ReadFile(filepath.Join(run, "tls-cert.pem"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(run, "tls-key.pem"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key file: %v, mode %v; want 0600", err, st)
		}
		blk, _ := pem.Decode(certPEM)
		if blk == nil {
			t.Fatal("no PEM certificate")
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.VerifyHostname("127.0.0.1"); err != nil {
			t.Error(err)
		}
		if !slices.Equal(args, []string{"--ssl-cert=" + filepath.Join(run, "tls-cert.pem"), "--ssl-key=" + filepath.Join(run, "tls-key.pem")}) {
			t.Errorf("options %v", args)
		}
	}
}
