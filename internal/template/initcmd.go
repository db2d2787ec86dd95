package template

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// runInitCmd runs the init command with the template server's DSN in the
// environment.
func runInitCmd(ctx context.Context, in *mariadb.Instance, opt BuildOptions, m *catalog.Meta) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", opt.InitCmd)
	cmd.Env = append(os.Environ(), dsn.Env(in.Config.Port, in.Config.Socket(), m.User, m.Password, opt.database())...)
	out := opt.InitOutput
	if out == nil {
		out = os.Stderr
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("init command %q failed with exit status %d: fix it and build again (its output is above)", opt.InitCmd, ee.ExitCode())
		}
		return fmt.Errorf("init command %q: %w", opt.InitCmd, err)
	}
	return nil
}
