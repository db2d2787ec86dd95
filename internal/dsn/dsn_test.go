package dsn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/dsn"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in                        string
		user, pass, net, addr, db string
		local                     bool
		redacted                  string
	}{
		{in: "mysql://root:s3cret@127.0.0.1:3307/", user: "root", pass: "s3cret", net: "tcp", addr: "127.0.0.1:3307", local: true, redacted: "mysql://root:***@127.0.0.1:3307/"},
		{in: "mariadb://app@db.example.com/shop", user: "app", net: "tcp", addr: "db.example.com:3306", db: "shop", redacted: "mysql://app@db.example.com:3306/shop"},
		{in: "mysql://u:p%40ss%3Aw@localhost/?socket=/run/mysqld/mysqld.sock", user: "u", pass: "p@ss:w", net: "unix", addr: "/run/mysqld/mysqld.sock", local: true, redacted: "mysql://u:***@/?socket=/run/mysqld/mysqld.sock"},
		{in: "mysql://u:p@[::1]:3306/", user: "u", pass: "p", net: "tcp", addr: "[::1]:3306", local: true},
		{in: "u:pw@tcp(10.0.0.1:3306)/x", user: "u", pass: "pw", net: "tcp", addr: "10.0.0.1:3306", db: "x"},
	} {
		c, err := dsn.Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if c.User != tc.user || c.Passwd != tc.pass || c.Net != tc.net || c.Addr != tc.addr || c.DBName != tc.db {
			t.Errorf("Parse(%q) = user %q pass %q net %q addr %q db %q", tc.in, c.User, c.Passwd, c.Net, c.Addr, c.DBName)
		}
		if got := dsn.IsLocal(c); got != tc.local {
			t.Errorf("IsLocal(%q) = %v, want %v", tc.in, got, tc.local)
		}
		r := dsn.Redacted(c)
		if tc.pass != "" && strings.Contains(r, tc.pass) {
			t.Errorf("Redacted(%q) = %q shows the password", tc.in, r)
		}
		if tc.redacted != "" && r != tc.redacted {
			t.Errorf("Redacted(%q) = %q, want %q", tc.in, r, tc.redacted)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"postgres://u:topsecret@h/",
		"mysql://u:topsecret@h:99999/",
		"mysql://u:topsecret@h/a/b",
		"mysql://u:topsecret@h/?sslmode=x",
		"mysql://u:top%zzsecret@h/",
		"just words",
	} {
		_, err := dsn.Parse(in)
		if !errors.Is(err, dsn.ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want ErrSyntax", in, err)
			continue
		}
		if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("Parse(%q) error shows the password: %v", in, err)
		}
	}
}

// TestFormatRoundTrip: what URL, TCP and Socket write, Parse and the driver
// read back unchanged, whatever characters the password holds.
func TestFormatRoundTrip(t *testing.T) {
	for _, pw := range []string{"plain", "p@ss:w/rd?#%", "sp ace&x=y", ""} {
		c, err := dsn.Parse(dsn.URL(3307, "us@er", pw, "db-1"))
		if err != nil {
			t.Fatalf("%q: %v", pw, err)
		}
		if c.User != "us@er" || c.Passwd != pw || c.DBName != "db-1" || c.Addr != "127.0.0.1:3307" {
			t.Errorf("URL %q read back as user %q password %q db %q addr %q", pw, c.User, c.Passwd, c.DBName, c.Addr)
		}
		for _, s := range []string{dsn.TCP(3307, "u", pw, "d"), dsn.Socket("/run/x.sock", "u", pw, "d")} {
			c, err := mysql.ParseDSN(s)
			if err != nil || c.Passwd != pw || c.DBName != "d" {
				t.Errorf("driver DSN for %q read back as %+v, %v", pw, c, err)
			}
		}
	}
}
