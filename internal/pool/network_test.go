package pool_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/tlsca"
)

// tlsPool brings up a one-slot pool whose slot serves TLS on loopback
// with a certificate of a fresh CA naming 127.0.0.1 (what `serve
// --slot-address` does for a non-loopback address; the namespace test in
// internal/netns does it across two network namespaces).
func tlsPool(t *testing.T) (*pool.Pool, string, *mariadb.Binary) {
	t.Helper()
	st, m := build(t, "auto", 1)
	ca, err := tlsca.Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile(),
		Network: &pool.Network{Bind: "127.0.0.1", Advertise: "127.0.0.1", TLS: &mariadb.TLS{CA: ca.PEM, Cert: cert, Key: key}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	return p, st.Catalog().Admin(), st.Binary()
}

// connectWith opens the lease's database over TCP with the TLS
// configuration registered as name (none when empty) and runs a query.
func connectWith(l *pool.Lease, user, password, name string) error {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName, c.TLSConfig = user, password, "tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)), "", name
	c.Timeout = 5 * time.Second
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	return db.QueryRow("SELECT 1").Scan(&one)
}

// TestSlotTLS: a lease of a slot with TLS carries the CA, its DSN names
// the TLS configuration, and a client verifying the certificate against
// that CA and the lease's host connects with TLS. The attacker's
// attempts are each refused: no TLS (require_secure_transport), TLS
// trusting another CA, TLS expecting another host name, the lease
// account over the unix socket without TLS (REQUIRE SSL), and the admin
// account over TCP (root@localhost only) even with its password.
func TestSlotTLS(t *testing.T) {
	p, admin, bin := tlsPool(t)
	mysqlServer := bin.Flavor == mariadb.MySQL
	l := lease(t, p)
	if !strings.Contains(l.CA, "BEGIN CERTIFICATE") || l.Host != "127.0.0.1" {
		t.Fatalf("lease lacks its CA or host: host %q, CA %q", l.Host, l.CA)
	}
	name := api.TLSConfigName(l.CA, l.Host)
	if !strings.Contains(l.DSN, "tls="+name) {
		t.Fatalf("DSN %q does not name the TLS configuration %s", l.DSN, name)
	}
	good, err := tlsca.ClientConfig([]byte(l.CA), l.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := mysql.RegisterTLSConfig(name, good); err != nil {
		t.Fatal(err)
	}
	db := open(t, l)
	if got := canary(t, db); got != "pristine,pristine" {
		t.Fatalf("canary over TLS: %q", got)
	}
	var k, cipher string
	if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&k, &cipher); err != nil || cipher == "" {
		t.Fatalf("the lease's connection is not TLS: %q %v", cipher, err)
	}

	// Every other account's TCP connection needs TLS as well.
	var secure bool
	if err := db.QueryRow("SELECT @@GLOBAL.require_secure_transport").Scan(&secure); err != nil || !secure {
		t.Errorf("require_secure_transport is off: %v", err)
	}

	other, err := tlsca.Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wrongCA, _ := tlsca.ClientConfig(other.PEM, l.Host)
	wrongHost, _ := tlsca.ClientConfig([]byte(l.CA), "db.example")
	mysql.RegisterTLSConfig("test-wrong-ca", wrongCA)
	mysql.RegisterTLSConfig("test-wrong-host", wrongHost)
	for _, c := range []struct {
		what, tls, want string
	}{
		// REQUIRE SSL answers first on 10.11; 11.8 refuses the insecure
		// transport before the account is looked at.
		{"without TLS", "", "Access denied|insecure transport are prohibited"},
		{"trusting another CA", "test-wrong-ca", "certificate signed by unknown authority"},
		{"expecting another host name", "test-wrong-host", "db.example"},
	} {
		err := connectWith(l, l.User, l.Password, c.tls)
		if err == nil || !regexp.MustCompile(c.want).MatchString(err.Error()) {
			t.Errorf("lease account %s: %v, want refused (%q)", c.what, err, c.want)
		}
	}
	// REQUIRE SSL holds on MariaDB's unix socket too, which
	// require_secure_transport does not cover. (MySQL counts a socket as
	// secure transport for both.)
	sock, err := sql.Open("mysql", dsn.Socket(l.Socket, l.User, l.Password, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	var one int
	if err := sock.QueryRow("SELECT 1").Scan(&one); !mysqlServer && (err == nil || !strings.Contains(err.Error(), "Access denied")) {
		t.Errorf("lease account over the unix socket without TLS: %v, want access denied (REQUIRE SSL)", err)
	}
	// The admin account, with the root's admin secret and with TLS.
	if err := connectWith(l, "root", admin, name); err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Errorf("admin over TCP with TLS: %v, want access denied", err)
	}
	// The lease's option file: MariaDB's own client connects over TCP with
	// TLS, the certificate verified against the CA file beside it.
	if l.OptionFile == "" {
		t.Fatal("the lease has no option file")
	}
	out, err := exec.Command(bin.Client("mariadb"), "--defaults-extra-file="+l.OptionFile, "-N", "-e", "SHOW SESSION STATUS LIKE 'Ssl_cipher'").CombinedOutput()
	if err != nil || len(strings.Fields(string(out))) != 2 {
		t.Errorf("mariadb with the lease's option file: %v: %s", err, out)
	}
	text, _ := os.ReadFile(l.OptionFile)
	// The same file naming 127.1 (the same address, a name the
	// certificate lacks, and one that needs no /etc/hosts entry, which a
	// fresh Debian root has none of): MariaDB's client refuses it (MySQL's
	// checks the CA only: see the option file).
	wrong := filepath.Join(filepath.Dir(l.OptionFile), "wrong.cnf")
	os.WriteFile(wrong, []byte(strings.Replace(string(text), `host="127.0.0.1"`, `host="127.1"`, 1)), 0o600)
	if out, err := exec.Command(bin.Client("mariadb"), "--defaults-extra-file="+wrong, "-N", "-e", "SELECT 1").CombinedOutput(); !mysqlServer && (err == nil || !regexp.MustCompile(`certificate|Hostname verification failed`).MatchString(string(out))) {
		t.Errorf("mariadb with the option file naming 127.1: %v: %s, want a certificate error", err, out)
	}
	for _, want := range []string{"ssl-ca=", "[client-mariadb]\nssl-verify-server-cert", "host=\"127.0.0.1\"", "protocol=TCP"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the option file lacks %s:\n%s", want, text)
		}
	}
	// The slot server gets one tmpdir, its clone's (slotArgs), and the
	// address and TLS options of its network.
	st := p.Status(true)
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", st.Slots[0].PID))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(string(cmd), "\x00")
	var tmpdirs []string
	for _, a := range args {
		if strings.HasPrefix(a, "--tmpdir=") {
			tmpdirs = append(tmpdirs, a)
		}
	}
	if len(tmpdirs) != 1 || !strings.Contains(tmpdirs[0], "#pristine-tmp") {
		t.Errorf("slot server tmpdirs: %q, want one, in its clone", tmpdirs)
	}
	for _, want := range []string{"--bind-address=127.0.0.1", "--require-secure-transport=ON"} {
		if !slices.Contains(args, want) {
			t.Errorf("slot server lacks %s: %q", want, args)
		}
	}
}
