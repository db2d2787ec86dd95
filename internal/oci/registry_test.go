package oci

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/pristinedb/pristine/internal/oci/localregistry"
)

// testRegistry is a localregistry killed when the test ends.
type testRegistry struct {
	*localregistry.Registry
	Dir    string // storage root
	CAFile string // the self-signed certificate, with TLS
	User   string // with auth: the account and its password
	Pass   string
	tls    bool
}

type registryOpts struct {
	TLS  bool
	Auth bool
}

// startRegistry starts a registry, or skips the test when the package is
// not installed.
func startRegistry(t *testing.T, o registryOpts) *testRegistry {
	t.Helper()
	dir := t.TempDir()
	c := localregistry.Config{Dir: dir}
	r := &testRegistry{tls: o.TLS}
	if o.TLS {
		c.TLSCert, c.TLSKey = selfSigned(t, dir)
		r.CAFile = c.TLSCert
	}
	if o.Auth {
		r.User, r.Pass = "ci", "s3cret-pass"
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		c.HTPasswd = filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(c.HTPasswd, []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := localregistry.Start(c)
	if errors.Is(err, localregistry.ErrMissing) {
		t.Skipf("%v: the registry tests need a real registry", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.Registry, r.Dir = reg, reg.Storage
	t.Cleanup(reg.Kill)
	return r
}

// kill stops the registry mid-test.
func (r *testRegistry) kill() { r.Kill() }

// start restarts it on the same port and storage.
func (r *testRegistry) start(t *testing.T) {
	t.Helper()
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
}

// remote is how the tests reach this registry.
func (r *testRegistry) remote() Remote {
	return Remote{PlainHTTP: !r.tls, CAFile: r.CAFile, Parallel: 4}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pristine test registry"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
