package oci

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// testRegistry is Debian's docker-registry (distribution 2.8) on a free
// loopback port, storing in a temporary directory. It is killed when the
// test ends.
type testRegistry struct {
	Addr   string // 127.0.0.1:PORT
	Dir    string // storage root
	CAFile string // the self-signed certificate, with TLS
	User   string // with auth: the account and its password
	Pass   string
	config string
	cmd    *exec.Cmd
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
	if _, err := exec.LookPath("docker-registry"); err != nil {
		t.Skip("docker-registry is not installed (apt-get install docker-registry; scripts/install-deps.sh installs it): the registry tests need a real registry")
	}
	dir := t.TempDir()
	r := &testRegistry{Dir: filepath.Join(dir, "storage"), tls: o.TLS}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Addr = l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", r.Dir, r.Addr)
	if o.TLS {
		cert, key := selfSigned(t, dir)
		r.CAFile = cert
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", cert, key)
	}
	if o.Auth {
		r.User, r.Pass = "ci", "s3cret-pass"
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: pristine-test\n    path: %s\n", htpasswd)
	}
	r.config = filepath.Join(dir, "config.yml")
	if err := os.WriteFile(r.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	t.Cleanup(r.kill)
	return r
}

// start runs the registry and waits until it answers /v2/.
func (r *testRegistry) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command("docker-registry", "serve", r.config)
	log, err := os.Create(r.config + ".log")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	r.cmd.Stdout, r.cmd.Stderr = log, log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: time.Second}
	scheme := "http"
	if r.tls {
		scheme = "https"
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // a readiness probe only
	}
	for range 200 {
		resp, err := client.Get(scheme + "://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(r.config + ".log")
	r.kill()
	t.Fatalf("docker-registry did not answer on %s within 10s; its log:\n%s", r.Addr, b)
}

// kill stops the registry this test started (by its pid).
func (r *testRegistry) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_, _ = r.cmd.Process.Wait()
		r.cmd = nil
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
