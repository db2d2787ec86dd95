// Package tlsca is the certificate authority of a pristine root: one CA
// per root (its key 0600, made with crypto/x509 on first use), which
// issues the certificates slot servers and the daemon's API present to
// clients on other machines. Clients are handed the CA's certificate
// (PEM) with every lease and verify the server's name against it.
package tlsca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Dir is where a root keeps its CA: <root>/tls.
func Dir(root string) string { return filepath.Join(root, "tls") }

// CertFile and KeyFile are the CA's certificate (public, handed to
// clients) and private key (0600, never leaves the root).
func CertFile(root string) string { return filepath.Join(Dir(root), "ca.pem") }

// KeyFile is the CA's private key, 0600.
func KeyFile(root string) string { return filepath.Join(Dir(root), "ca-key.pem") }

// CA issues server certificates.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA's certificate, what clients verify servers against.
	PEM []byte
}

// caValidity is how long a root's CA is valid; issued certificates are
// valid for leafValidity (a slot server is restarted far more often).
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 397 * 24 * time.Hour
)

// Load reads the CA of root, making one the first time (key 0600 in a
// 0700 directory).
func Load(root string) (*CA, error) {
	certPEM, err := os.ReadFile(CertFile(root))
	if errors.Is(err, os.ErrNotExist) {
		return create(root)
	}
	if err != nil {
		return nil, fmt.Errorf("read the root's CA: %w", err)
	}
	keyPEM, err := os.ReadFile(KeyFile(root))
	if err != nil {
		return nil, fmt.Errorf("read the root's CA key: %w: remove %s to make a new CA (clients must then fetch the new ca.pem)", err, Dir(root))
	}
	ca, err := parse(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the root's CA in %s: %w: remove the directory to make a new one", Dir(root), err)
	}
	if st, err := os.Stat(KeyFile(root)); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the root's CA key %s has mode %v: others may read it; chmod 600 it (and make a new CA if it leaked: remove %s)", KeyFile(root), st.Mode().Perm(), Dir(root))
	}
	return ca, nil
}

func parse(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: certPEM}, nil
}

func create(root string) (*CA, error) {
	if err := os.MkdirAll(Dir(root), 0o700); err != nil {
		return nil, fmt.Errorf("make the root's CA: %w", err)
	}
	if err := os.Chmod(Dir(root), 0o700); err != nil {
		return nil, fmt.Errorf("make the root's CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "pristine CA " + host, Organization: []string{"pristine"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make the root's CA: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	// The key first, 0600 from its creation; the certificate last, so a
	// CA whose certificate exists has its key.
	if err := writeNew(KeyFile(root), keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeNew(CertFile(root), certPEM, 0o644); err != nil {
		return nil, err
	}
	return parse(certPEM, keyPEM)
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("make the root's CA: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("make the root's CA: %w", err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

// Issue makes a server certificate for hosts (names or IP addresses, put
// in its subject alternative names), signed by the CA, and returns the
// certificate and its fresh key as PEM.
func (ca *CA) Issue(hosts ...string) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("issue a certificate: no host name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"pristine"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("issue a certificate for %v: %w", hosts, err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// ServerConfig is a tls.Config presenting a certificate the CA issues for
// hosts (the daemon's API over TCP).
func (ca *CA) ServerConfig(hosts ...string) (*tls.Config, error) {
	c, k, err := ca.Issue(hosts...)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// ClientConfig is a tls.Config trusting only the CA of caPEM and
// expecting serverName (a host name or IP address) in the server's
// certificate.
func ClientConfig(caPEM []byte, serverName string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the CA certificate is not PEM: pass the ca.pem of the daemon's root (or a lease's ca field)")
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}
