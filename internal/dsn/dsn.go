// Package dsn reads the connection URLs pristine accepts for a source
// server (`template build --from-server`, `verify`):
//
//	mysql://user:password@host:port/database?socket=/path/to/mysqld.sock
//
// mariadb:// is accepted too. The password, user and database are
// percent-decoded. With ?socket= the server is reached on that unix socket
// and host and port are ignored. A go-sql-driver DSN
// (user:password@tcp(host:port)/db) is accepted as well. Redacted prints a
// configuration without its password, for messages and logs.
package dsn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// DefaultPort is the port used when a URL names none.
const DefaultPort = 3306

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("bad server URL")

// Parse reads a mysql:// or mariadb:// URL (or a go-sql-driver DSN) into a
// driver configuration. Errors never include the password.
func Parse(s string) (*mysql.Config, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty: use mysql://user:password@host:port/", ErrSyntax)
	}
	scheme, _, ok := strings.Cut(s, "://")
	if !ok {
		c, err := mysql.ParseDSN(s)
		if err != nil {
			return nil, fmt.Errorf("%w: not a mysql:// URL nor a driver DSN: use mysql://user:password@host:port/", ErrSyntax)
		}
		return c, nil
	}
	switch strings.ToLower(scheme) {
	case "mysql", "mariadb":
	default:
		return nil, fmt.Errorf("%w: scheme %q: use mysql:// or mariadb://", ErrSyntax, scheme)
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error repeats the whole URL, password included: say less.
		return nil, fmt.Errorf("%w: cannot parse it (percent-encode special characters in the password, e.g. @ as %%40)", ErrSyntax)
	}
	c := mysql.NewConfig()
	if u.User != nil {
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
	}
	db := strings.TrimPrefix(u.Path, "/")
	if strings.Contains(db, "/") {
		return nil, fmt.Errorf("%w: path %q: give at most one database after the host", ErrSyntax, u.Path)
	}
	c.DBName = db
	q := u.Query()
	if sock := q.Get("socket"); sock != "" {
		c.Net, c.Addr = "unix", sock
	} else {
		host := u.Hostname()
		if host == "" {
			host = "127.0.0.1"
		}
		port := DefaultPort
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 || n > 65535 {
				return nil, fmt.Errorf("%w: port %q: use a number from 1 to 65535", ErrSyntax, p)
			}
			port = n
		}
		c.Net, c.Addr = "tcp", net.JoinHostPort(host, strconv.Itoa(port))
	}
	for k, v := range q {
		switch k {
		case "socket":
		case "tls":
			c.TLSConfig = v[0]
		default:
			return nil, fmt.Errorf("%w: parameter %q: only socket and tls are understood", ErrSyntax, k)
		}
	}
	if c.TLSConfig != "" {
		// Resolves "true", "skip-verify" and "preferred" into a tls.Config.
		norm, err := mysql.ParseDSN(c.FormatDSN())
		if err != nil {
			return nil, fmt.Errorf("%w: tls=%q: use true, false, skip-verify or preferred", ErrSyntax, c.TLSConfig)
		}
		c = norm
	}
	return c, nil
}

// Redacted prints c as a mysql:// URL without its password, for messages.
func Redacted(c *mysql.Config) string {
	var b strings.Builder
	b.WriteString("mysql://")
	if c.User != "" {
		b.WriteString(url.User(c.User).String())
		if c.Passwd != "" {
			b.WriteString(":***")
		}
		b.WriteString("@")
	}
	if c.Net == "unix" {
		b.WriteString("/" + url.PathEscape(c.DBName) + "?socket=" + c.Addr)
		return b.String()
	}
	b.WriteString(c.Addr + "/" + url.PathEscape(c.DBName))
	return b.String()
}

// IsLocal reports whether c reaches a server on this host: a unix socket or
// a loopback address (localhost, 127.0.0.0/8, ::1).
func IsLocal(c *mysql.Config) bool {
	if c.Net == "unix" {
		return true
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		host = c.Addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
