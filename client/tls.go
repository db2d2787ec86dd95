package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/api"
)

// registered are the TLS configurations registered with the driver, by name.
var registered sync.Map

// withTLS registers the TLS configuration a lease's DSN names, when the
// lease carries a CA (a slot reachable over the network): the driver
// then verifies the server's certificate against that CA and its name
// against the lease's host. It returns err, or the registration's error.
func withTLS(l *api.Lease, err error) (*api.Lease, error) {
	if err != nil || l.CA == "" {
		return l, err
	}
	return l, RegisterLeaseTLS(l)
}

// RegisterLeaseTLS registers with go-sql-driver/mysql the TLS
// configuration the DSN of lease l names (tls=pristine-...): trust the
// lease's CA only, and expect its Host in the server's certificate. The
// client's lease calls do it; call it for a lease read elsewhere (JSON
// from `pristine lease --json`). A lease without a CA needs nothing.
func RegisterLeaseTLS(l *api.Lease) error {
	if l.CA == "" {
		return nil
	}
	name := api.TLSConfigName(l.CA, l.Host)
	if _, ok := registered.Load(name); ok {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(l.CA)) {
		return fmt.Errorf("lease %s: its CA is not a PEM certificate", l.ID)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: l.Host, MinVersion: tls.VersionTLS12}
	if err := mysql.RegisterTLSConfig(name, cfg); err != nil {
		return fmt.Errorf("lease %s: register its TLS configuration: %w", l.ID, err)
	}
	registered.Store(name, true)
	return nil
}
