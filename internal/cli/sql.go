package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/api"
)

func newSQLCmd(g *Globals) *cobra.Command {
	var template string
	cmd := &cobra.Command{
		Use:   "sql [LEASE] [-- MARIADB-ARGS...]",
		Short: "open the mariadb client on a lease (or on a fresh lease, released on exit)",
		Long: `sql runs the mariadb client connected to a leased database: the lease named, else
$PRISTINE_LEASE, else a fresh lease of the only pool (or --template), released when
the client exits. Arguments after -- go to mariadb.`,
		Example: `  pristine sql                               # a fresh database, gone when you quit
  pristine sql "$PRISTINE_LEASE" -- -e 'SHOW TABLES'
  pristine sql --template app -- -N -e 'SELECT COUNT(*) FROM users'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, extra := "", args
			if dash := cmd.ArgsLenAtDash(); dash != 0 && len(args) > 0 {
				if dash > 1 || (dash < 0 && len(args) > 1) {
					return fmt.Errorf("%w: pristine sql takes one LEASE; put mariadb's arguments after --", ErrUsage)
				}
				id, extra = args[0], args[1:]
			}
			return RunSQL(cmd.Context(), g, id, template, extra)
		},
	}
	cmd.Flags().StringVar(&template, "template", "", "for a fresh lease: the template whose pool to lease from (default: the only pool)")
	return cmd
}

// RunSQL runs the mariadb client on lease id ($PRISTINE_LEASE when empty),
// or on a fresh lease of template that it releases when the client exits.
// The client's exit status is returned as an *exec.ExitError.
func RunSQL(ctx context.Context, g *Globals, id, template string, args []string) error {
	client, err := exec.LookPath("mariadb")
	if err != nil {
		if client, err = exec.LookPath("mysql"); err != nil {
			return errors.New("pristine sql: no mariadb client on PATH: apt-get install mariadb-client")
		}
	}
	c, _, err := g.daemon(ctx, false)
	if err != nil {
		return err
	}
	var l *api.Lease
	if id == "" && template == "" {
		// The lease of `eval "$(pristine lease)"`, unless it was released.
		if env := os.Getenv("PRISTINE_LEASE"); env != "" {
			if l, err = c.GetLease(ctx, env); err != nil {
				g.stderrf("pristine sql: $PRISTINE_LEASE (%s) is not held any more (%v); using a fresh lease", env, err)
				l = nil
			}
		}
	} else if id != "" {
		if l, err = c.GetLease(ctx, id); err != nil {
			return fmt.Errorf("pristine sql: lease %s: %w", id, err)
		}
	}
	if l == nil {
		req := api.LeaseRequest{Template: template, Holder: "pristine sql", PID: os.Getpid(), TTL: (8 * time.Hour).Seconds(), Wait: time.Minute.Seconds()}
		if l, err = c.Lease(ctx, req); err != nil {
			return err
		}
		g.stderrf("pristine sql: lease %s of %s, released when mariadb exits", l.ID, l.Template)
		defer func() {
			if _, err := c.Release(context.Background(), l.ID, false); err != nil {
				g.stderrf("pristine sql: release %s: %v", l.ID, err)
			}
		}()
	}
	if l.OptionFile == "" {
		return fmt.Errorf("pristine sql: lease %s has no option file: its daemon is older than this pristine; restart it (pristine pool down, pool up)", l.ID)
	}
	run := exec.Command(client, append([]string{"--defaults-extra-file=" + l.OptionFile}, args...)...)
	run.Stdin, run.Stdout, run.Stderr = g.IO.In, g.IO.Out, g.IO.Err
	run.Env = leaseEnv(os.Environ(), l)
	// Ctrl-C belongs to the client (it cancels the running query); this
	// process waits for it either way and then releases the lease.
	if err := run.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee
		}
		return fmt.Errorf("pristine sql: run %s: %w", filepath.Base(client), err)
	}
	return nil
}

// leaseEnv is env with the connection variables of another database
// replaced by the lease's.
func leaseEnv(env []string, l *api.Lease) []string {
	out := make([]string, 0, len(env)+len(l.Env)+1)
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if strings.HasPrefix(k, "MYSQL_") || k == "DATABASE_URL" || k == "DSN" || k == "PRISTINE_LEASE" {
			continue
		}
		out = append(out, e)
	}
	out = append(out, l.Env...)
	return append(out, "PRISTINE_LEASE="+l.ID)
}
