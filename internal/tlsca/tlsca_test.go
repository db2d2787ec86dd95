package tlsca

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

// TestCA: a root's CA is made once (key 0600 in a 0700 directory) and
// loaded after; its certificates name their hosts and verify against its
// PEM only; a key others may read is refused.
func TestCA(t *testing.T) {
	root := t.TempDir()
	ca, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{Dir(root): 0o700, KeyFile(root): 0o600, CertFile(root): 0o644} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", path, st.Mode().Perm(), err, want)
		}
	}
	again, err := Load(root)
	if err != nil || string(again.PEM) != string(ca.PEM) {
		t.Fatalf("a second Load made another CA: %v", err)
	}
	certPEM, _, err := ca.Issue("pool.example", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Load(t.TempDir())
	for _, c := range []struct {
		name  string
		caPEM []byte
		ok    bool
	}{
		{"pool.example", ca.PEM, true},
		{"192.0.2.1", ca.PEM, true},
		{"other.example", ca.PEM, false},
		{"192.0.2.2", ca.PEM, false},
		{"pool.example", other.PEM, false},
	} {
		cfg, err := ClientConfig(c.caPEM, c.name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cert.Verify(x509.VerifyOptions{Roots: cfg.RootCAs, DNSName: c.name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if (err == nil) != c.ok {
			t.Errorf("verify %s against %s CA: %v, want ok=%v", c.name, map[bool]string{true: "its", false: "another"}[string(c.caPEM) == string(ca.PEM)], err, c.ok)
		}
	}
	if _, err := ca.ServerConfig("pool.example"); err != nil {
		t.Fatal(err)
	}
	os.Chmod(KeyFile(root), 0o644)
	if _, err := Load(root); err == nil {
		t.Errorf("a CA key others may read was loaded")
	}
}
