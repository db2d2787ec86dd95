package pool

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/dsn"
)

// Lease is a database handed to one holder until released.
type Lease struct {
	ID       string    `json:"id"`
	Template string    `json:"template"`
	Slot     int       `json:"slot"`
	Holder   string    `json:"holder,omitempty"`
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	Socket   string    `json:"socket"`
	User     string    `json:"user"`
	Password string    `json:"password"`
	Database string    `json:"database"`
	DSN      string    `json:"dsn"` // go-sql-driver/mysql form, over TCP
	URL      string    `json:"url"` // mysql://user:password@127.0.0.1:port/db
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
	// Env is the environment that hands this database to a program; its
	// MYSQL_HOME makes the mariadb clients read OptionFile.
	Env []string `json:"env"`
	// OptionFile is a my.cnf with this lease's connection, 0600, removed
	// when the lease ends: `mariadb --defaults-extra-file=FILE`, or
	// MYSQL_HOME set to its directory, connects with no other flag.
	OptionFile string `json:"option_file,omitempty"`
	// Kept leases are held for debugging: no expiry, no reset until released.
	Kept bool `json:"kept,omitempty"`
	// PID is the holder's process; the lease is reclaimed when it exits.
	PID      int    `json:"pid,omitempty"`
	PIDStart string `json:"pid_start,omitempty"`
	// Clone names the clone of the slot the lease was handed out on; a
	// restarted daemon restores the lease only onto that same clone.
	Clone string `json:"clone,omitempty"`
	// CA is the PEM certificate of the CA that issued the slot server's
	// certificate, for a pool reachable over the network (Network): the
	// holder connects with TLS and verifies the server's name (Host)
	// against it. Empty: a loopback pool, no TLS.
	CA string `json:"ca,omitempty"`
	// Group is the holder group the lease counts against (the daemon's
	// --max-leases-per-group).
	Group string `json:"group,omitempty"`
	// restored leases came back after a daemon restart: their slot's
	// marks were taken after the holder's writes, so they cannot be
	// released as unchanged.
	restored bool
}

func newLeaseID() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// fill sets the connection fields of a lease for a slot's unit; n is the
// pool's Network (nil: loopback).
func (l *Lease) fill(s *slot, u *unit, n *Network) {
	db := u.db
	l.Host, l.Port, l.Socket, l.Clone = n.host(), s.port, s.srv.Socket(), s.clone
	l.User, l.Password, l.Database = u.acct.user, u.acct.password, db
	tlsName := ""
	if n.tls() {
		l.CA = string(n.TLS.CA)
		tlsName = api.TLSConfigName(l.CA, l.Host)
	}
	l.DSN = dsn.TCPAt(l.Host, l.Port, l.User, l.Password, db, tlsName)
	l.URL = dsn.URLAt(l.Host, l.Port, l.User, l.Password, db)
	l.Env = dsn.EnvAt(l.Host, l.Port, l.Socket, l.User, l.Password, db)
}
