package api

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultRoot is the directory a daemon keeps its state, socket
// (pristine.sock) and token in when nothing else is named: PRISTINE_ROOT,
// else /var/lib/pristine for root, else ~/.local/share/pristine.
func DefaultRoot() string {
	if p := os.Getenv("PRISTINE_ROOT"); p != "" {
		return p
	}
	if os.Geteuid() == 0 {
		return "/var/lib/pristine"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "pristine")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("pristine-%d", os.Geteuid()))
}

// SocketPath is the daemon's unix socket in root: root/pristine.sock.
func SocketPath(root string) string { return filepath.Join(root, "pristine.sock") }
