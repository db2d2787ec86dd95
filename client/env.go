package client

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pristinedb/pristine/api"
)

// FromEnv returns a client for the daemon the environment names:
// PRISTINE_URL (with PRISTINE_TOKEN, or the token file of PRISTINE_ROOT)
// for TCP, https verified against PRISTINE_CA_FILE when set, leases in
// the holder group PRISTINE_GROUP when set, else the unix socket of PRISTINE_ROOT, else the socket
// of the default root (/var/lib/pristine for root, ~/.local/share/pristine
// otherwise). It does not contact the daemon.
func FromEnv() (*Client, error) {
	root := api.DefaultRoot()
	if u := os.Getenv("PRISTINE_URL"); u != "" {
		tok := os.Getenv("PRISTINE_TOKEN")
		if tok == "" {
			file := filepath.Join(root, "token")
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("PRISTINE_URL is set but PRISTINE_TOKEN is not, and %s: set PRISTINE_TOKEN to the token in %s on the daemon's host", err, file)
			}
			tok = strings.TrimSpace(string(b))
		}
		c := NewTCP(u, tok)
		c.Group = os.Getenv("PRISTINE_GROUP")
		if f := os.Getenv("PRISTINE_CA_FILE"); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("PRISTINE_CA_FILE: %w: copy the daemon root's tls/ca.pem here", err)
			}
			if err := c.TrustCA(b); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	return New(filepath.Join(root, "pristine.sock")), nil
}
