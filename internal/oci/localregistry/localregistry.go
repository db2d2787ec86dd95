// Package localregistry runs Debian's docker-registry (distribution 2.8) on
// a free loopback port, for the registry tests and `pristine-bench bench-fleet`.
// It never uses the system service: the binary runs with a config file of
// its own, and Kill stops exactly the process Start started.
package localregistry

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ErrMissing is returned when docker-registry is not installed.
var ErrMissing = errors.New("docker-registry is not installed: apt-get install docker-registry (scripts/install-deps.sh installs it)")

// Config says how to run the registry.
type Config struct {
	// Dir holds the config file, the log and (under storage/) the blobs.
	Dir string
	// TLSCert and TLSKey, when set, make it serve HTTPS.
	TLSCert, TLSKey string
	// HTPasswd, when set, is a bcrypt htpasswd file: basic auth.
	HTPasswd string
}

// Registry is a running registry.
type Registry struct {
	Addr    string // 127.0.0.1:PORT
	Storage string // the storage root: docker/registry/v2/... below it
	cfg     Config
	config  string
	cmd     *exec.Cmd
}

// Start writes a config file and starts the registry on a free port.
func Start(c Config) (*Registry, error) {
	if _, err := exec.LookPath("docker-registry"); err != nil {
		return nil, ErrMissing
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Registry{Addr: l.Addr().String(), Storage: filepath.Join(c.Dir, "storage"), cfg: c}
	l.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", r.Storage, r.Addr)
	if c.TLSCert != "" {
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", c.TLSCert, c.TLSKey)
	}
	if c.HTPasswd != "" {
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: pristine\n    path: %s\n", c.HTPasswd)
	}
	r.config = filepath.Join(c.Dir, "registry.yml")
	if err := os.WriteFile(r.config, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	return r, r.Restart()
}

// Restart starts the registry again (after Kill) on the same port and
// storage, and waits until it answers /v2/.
func (r *Registry) Restart() error {
	r.cmd = exec.Command("docker-registry", "serve", r.config)
	log, err := os.OpenFile(r.config+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	r.cmd.Stdout, r.cmd.Stderr = log, log
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start docker-registry: %w", err)
	}
	client := &http.Client{Timeout: time.Second}
	scheme := "http"
	if r.cfg.TLSCert != "" {
		scheme = "https"
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // a readiness probe only
	}
	for range 200 {
		resp, err := client.Get(scheme + "://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(r.config + ".log")
	r.Kill()
	return fmt.Errorf("docker-registry did not answer on %s within 10s; its log:\n%s", r.Addr, b)
}

// Kill stops the registry process Start or Restart started.
func (r *Registry) Kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_, _ = r.cmd.Process.Wait()
		r.cmd = nil
	}
}

// BlobPath is where the registry keeps the blob with a sha256 hex digest.
func (r *Registry) BlobPath(hex string) string {
	return filepath.Join(r.Storage, "docker/registry/v2/blobs/sha256", hex[:2], hex, "data")
}
