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
// for loopback TCP, else the unix socket of PRISTINE_ROOT, else the socket
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
		return NewTCP(u, tok), nil
	}
	return New(filepath.Join(root, "pristine.sock")), nil
}
