package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/template"
)

// What pristine-bench (internal/bench/benchcli) shares with pristine's
// command tree: the global flags, the root's builder and daemon, the exit
// codes. Nothing here reaches back into the benchmarks.

// OpenBuilder opens the template builder of the root named by the global
// flags, on the backend the root's filesystem supports.
func (g *Globals) OpenBuilder(ctx context.Context) (*template.Builder, error) {
	return g.openBuilder(ctx, "auto")
}

// Daemon returns a client of the root's daemon, starting one in the
// background when start is true and none answers.
func (g *Globals) Daemon(ctx context.Context, start bool) (*client.Client, *rootdir.Root, error) {
	return g.daemon(ctx, start)
}

// InUse reports whether a pool's clones of a template exist under the root.
func InUse(st *template.Builder) func(hash string) bool { return inUse(st) }

// PristineExe is the pristine binary: this process's own when it is
// pristine, else the pristine beside it (bin/pristine-bench finds
// bin/pristine), else the one on $PATH. A daemon started for a command,
// and the benchmarks that time pack and unpack, run it.
func PristineExe() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the pristine binary: %w", err)
	}
	if filepath.Base(self) == "pristine" {
		return self, nil
	}
	beside := filepath.Join(filepath.Dir(self), "pristine")
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return beside, nil
	}
	if p, err := exec.LookPath("pristine"); err == nil {
		return p, nil
	} else if !errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("find the pristine binary: %w", err)
	}
	return "", fmt.Errorf("no pristine binary beside %s nor on $PATH: build it with scripts/build.sh (it writes bin/pristine beside bin/pristine-bench)", self)
}
