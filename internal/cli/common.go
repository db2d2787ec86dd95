package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/rootdir"
)

// openRoot opens the root named by --root, $PRISTINE_ROOT or the default.
func (g *Globals) openRoot() (*rootdir.Root, error) {
	p := g.Root
	if p == "" {
		p = rootdir.Default()
	}
	return rootdir.Open(p)
}

// printJSON writes v to stdout as indented JSON.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isTerminal reports whether f is a terminal; progress is shown only there.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// stderrf prints a line to stderr.
func stderrf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// parseBytes reads a size such as 512M, 8G, 1.5GiB or 1048576.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%w: size %q: use a number with an optional K, M, G or T suffix, e.g. 8G", errUsage, s)
	}
	return int64(f * float64(mult)), nil
}
