package cli

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/units"
)

// openRoot opens the root named by --root, $PRISTINE_ROOT or the default.
func (g *Globals) openRoot() (*rootdir.Root, error) {
	p := g.Root
	if p == "" {
		p = rootdir.Default()
	}
	return rootdir.Open(p)
}

// isTerminal reports whether f is a terminal; progress is shown only there.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// parseBytes reads a size flag such as 8G; a bad one is a usage error.
func parseBytes(s string) (int64, error) {
	n, err := units.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return n, nil
}
