package dsn

import (
	"net"
	"net/url"
	"strconv"

	"github.com/go-sql-driver/mysql"
)

// Socket is a go-sql-driver/mysql DSN for a server's unix socket.
func Socket(socket, user, password, database string) string {
	return driverDSN("unix", socket, user, password, database)
}

// TCP is a go-sql-driver/mysql DSN for a loopback TCP port.
func TCP(port int, user, password, database string) string {
	return TCPAt("127.0.0.1", port, user, password, database, "")
}

// TCPAt is a go-sql-driver/mysql DSN for host:port; tlsName, when set,
// names the TLS configuration the client registers for it
// (mysql.RegisterTLSConfig; the Go client does it for every lease that
// carries a CA, under api.TLSConfigName).
func TCPAt(host string, port int, user, password, database, tlsName string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = user, password, "tcp", net.JoinHostPort(host, strconv.Itoa(port)), database
	c.TLSConfig = tlsName
	return c.FormatDSN()
}

func driverDSN(network, addr, user, password, database string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = user, password, network, addr, database
	return c.FormatDSN()
}

// URL is a mysql:// URL for a loopback TCP port, with user, password and
// database percent-encoded so Parse reads them back unchanged.
func URL(port int, user, password, database string) string {
	return URLAt("127.0.0.1", port, user, password, database)
}

// URLAt is URL for host:port.
func URLAt(host string, port int, user, password, database string) string {
	u := url.URL{Scheme: "mysql", User: url.UserPassword(user, password),
		Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: "/" + database}
	return u.String()
}

// Env is the environment that hands a loopback server to a program:
// DATABASE_URL and the variables the mysql/mariadb clients read.
func Env(port int, socket, user, password, database string) []string {
	return EnvAt("127.0.0.1", port, socket, user, password, database)
}

// EnvAt is Env for a server at host:port.
func EnvAt(host string, port int, socket, user, password, database string) []string {
	return []string{
		"DATABASE_URL=" + URLAt(host, port, user, password, database),
		"MYSQL_HOST=" + host,
		"MYSQL_PORT=" + strconv.Itoa(port),
		"MYSQL_TCP_PORT=" + strconv.Itoa(port), // what the mariadb client reads
		"MYSQL_UNIX_PORT=" + socket,
		"MYSQL_USER=" + user,
		"MYSQL_PWD=" + password,
		"MYSQL_DATABASE=" + database,
	}
}
