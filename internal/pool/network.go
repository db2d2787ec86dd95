package pool

import (
	"net"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// Network makes a pool's slots reachable from other machines (`pristine
// serve --slot-address ADDR --advertise HOST`): every slot server listens
// on Bind, leases name Advertise as their host and, with TLS, carry the
// CA's certificate. A slot server with TLS refuses every TCP connection
// without it (require_secure_transport), and its lease accounts are
// REQUIRE SSL (newAccount); the admin account is root@localhost, which a
// TCP connection from another host never matches.
type Network struct {
	Bind      string       // address the slot servers listen on, e.g. the pod IP
	Advertise string       // host name or address leases tell clients; empty: Bind
	TLS       *mariadb.TLS // the certificate slots present; nil: no TLS (loopback only)
}

// IsLoopback tells whether addr (an IP address or "localhost") can be
// reached from this host only.
func IsLoopback(addr string) bool {
	if addr == "localhost" {
		return true
	}
	ip := net.ParseIP(addr)
	return ip != nil && ip.IsLoopback()
}

// host is the host leases name.
func (n *Network) host() string {
	switch {
	case n == nil:
		return "127.0.0.1"
	case n.Advertise != "":
		return n.Advertise
	case n.Bind != "":
		return n.Bind
	}
	return "127.0.0.1"
}

// bind is the address slot servers listen on ("" is loopback).
func (n *Network) bind() string {
	if n == nil {
		return ""
	}
	return n.Bind
}

func (n *Network) tls() bool { return n != nil && n.TLS != nil }

// serverTLS is what the slot servers present, or nil.
func (n *Network) serverTLS() *mariadb.TLS {
	if !n.tls() {
		return nil
	}
	return n.TLS
}
