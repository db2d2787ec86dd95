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
	return driverDSN("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), user, password, database)
}

func driverDSN(network, addr, user, password, database string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = user, password, network, addr, database
	return c.FormatDSN()
}

// URL is a mysql:// URL for a loopback TCP port, with user, password and
// database percent-encoded so Parse reads them back unchanged.
func URL(port int, user, password, database string) string {
	u := url.URL{Scheme: "mysql", User: url.UserPassword(user, password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: "/" + database}
	return u.String()
}

// Env is the environment that hands a loopback server to a program:
// DATABASE_URL and the variables the mysql/mariadb clients read.
func Env(port int, socket, user, password, database string) []string {
	return []string{
		"DATABASE_URL=" + URL(port, user, password, database),
		"MYSQL_HOST=127.0.0.1",
		"MYSQL_PORT=" + strconv.Itoa(port),
		"MYSQL_TCP_PORT=" + strconv.Itoa(port), // what the mariadb client reads
		"MYSQL_UNIX_PORT=" + socket,
		"MYSQL_USER=" + user,
		"MYSQL_PWD=" + password,
		"MYSQL_DATABASE=" + database,
	}
}
