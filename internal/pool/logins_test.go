package pool

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A lease's account has logged in once before it is handed out, on a
// server that caches logins (MySQL's caching_sha2_password), so the
// holder's first login over TCP is checked against that cache: no RSA
// exchange, no full hash of the password on the server's CPU. Each login
// here offers a public key the server does not own, so a login that needs
// the exchange (nothing cached) is refused. Checked on a slot's first
// lease, after an in-place reset and after an unchanged release; without
// liveServer.warmLogins each of the three is refused.
func TestLeaseLoginCached(t *testing.T) {
	p, _ := inplacePool(t)
	if !p.bin.Flavor.CachesLogins() {
		t.Skipf("%s caches no logins: nothing to warm", p.bin.Flavor.Name())
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	mysql.RegisterServerPubKey("not-the-servers", &key.PublicKey)
	defer mysql.DeregisterServerPubKey("not-the-servers")
	firstLogin := func(l *Lease, what string) {
		t.Helper()
		cfg, err := mysql.ParseDSN(l.DSN)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ServerPubKey = "not-the-servers"
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := c.Connect(ctx)
		if err != nil {
			t.Errorf("%s: the holder's first login needed the key exchange (no login cached): %v", what, err)
			return
		}
		conn.Close()
	}

	l := leaseIn(t, p)
	firstLogin(l, "a new slot's first lease")
	if _, err := openLease(t, l).Exec("INSERT INTO parent (name) VALUES ('written')"); err != nil {
		t.Fatal(err)
	}
	before := paths(p)[PathInPlace]
	if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
		t.Fatal(err)
	}
	l = leaseIn(t, p)
	if got := paths(p)[PathInPlace]; got != before+1 {
		t.Fatalf("in-place resets %d, want %d", got, before+1)
	}
	firstLogin(l, "after an in-place reset")
	if _, err := p.Release(context.Background(), l.ID, Unchanged); err != nil {
		t.Fatal(err)
	}
	l = leaseIn(t, p)
	defer p.Release(context.Background(), l.ID, Dirty)
	firstLogin(l, "after an unchanged release")
}
