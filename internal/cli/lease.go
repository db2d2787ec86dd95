package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/quote"
)

func newLeaseCmd(g *Globals) *cobra.Command {
	var req api.LeaseRequest
	var ttl, wait time.Duration
	cmd := &cobra.Command{
		Use:   "lease [--template NAME]",
		Short: "hand out a pristine database and print its DSN and environment",
		Example: `  eval "$(pristine lease)" && mariadb -e 'SHOW TABLES'   # then: pristine release "$PRISTINE_LEASE"
  pristine lease --json --template app --ttl 5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			req.TTL, req.Wait = ttl.Seconds(), wait.Seconds()
			l, err := RunLease(cmd.Context(), g, req)
			if err != nil {
				if g.JSON { // a script reading stdout gets JSON either way
					_ = g.printJSON(map[string]string{"error": err.Error()})
				}
				return err
			}
			if g.JSON { // to the holder: with the credentials
				return g.printJSON(l.WithCredentials())
			}
			fmt.Fprintf(g.IO.Err, "lease %s: slot %d of %s (release with `pristine release %s`)\n", l.ID, l.Slot, l.Template, l.ID)
			if l.OptionFile != "" {
				fmt.Fprintf(g.IO.Err, "  mariadb (mysql), mariadb-dump %s (mysqldump) and mariadb-admin (mysqladmin) now connect to it with no flags (MYSQL_HOME=%s); or: pristine sql\n", l.Database, filepath.Dir(l.OptionFile))
			}
			// Shell syntax, so `eval "$(pristine lease)"` sets the variables.
			fmt.Fprintf(g.IO.Out, "export PRISTINE_LEASE=%s\n", quote.Shell(l.ID))
			fmt.Fprintf(g.IO.Out, "export DSN=%s\n", quote.Shell(l.DSN))
			for _, e := range l.Env {
				k, v, _ := strings.Cut(e, "=")
				fmt.Fprintf(g.IO.Out, "export %s=%s\n", k, quote.Shell(v))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Template, "template", "", "template whose pool to lease from (default: the only pool)")
	cmd.Flags().StringVar(&req.Holder, "holder", "", "who holds the lease, for status and logs")
	cmd.Flags().DurationVar(&ttl, "ttl", 30*time.Minute, "the lease is reclaimed after this long")
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "how long to wait for a free slot")
	cmd.Flags().IntVar(&req.PID, "pid", 0, "reclaim the lease when this process exits, e.g. --pid $$ (default: only the TTL reclaims it)")
	cmd.AddCommand(newLeaseKeepCmd(g), newLeaseExtendCmd(g), newLeaseLsCmd(g), newLeaseShowCmd(g), newLeaseForkCmd(g))
	return cmd
}

func newLeaseKeepCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "keep ID",
		Short: "hold a lease for debugging: never reclaimed or reset until released",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			l, err := c.Keep(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if g.JSON { // to the holder: with the credentials
				return g.printJSON(l.WithCredentials())
			}
			fmt.Fprintf(g.IO.Out, "lease %s kept: %s (release it with `pristine release %s`)\n", l.ID, l.URL, l.ID)
			return nil
		},
	}
}

func newLeaseExtendCmd(g *Globals) *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "extend ID --ttl DURATION",
		Short: "give a lease more time",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			l, err := c.Extend(cmd.Context(), args[0], ttl)
			if err != nil {
				return err
			}
			if g.JSON { // to the holder: with the credentials
				return g.printJSON(l.WithCredentials())
			}
			fmt.Fprintf(g.IO.Out, "lease %s now expires at %s\n", l.ID, l.Expires.Local().Format(time.DateTime))
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 30*time.Minute, "new time to live, from now")
	return cmd
}

func newLeaseShowCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "print a lease with its credentials, or why it was lost",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			l, err := c.GetLease(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if g.JSON { // to the holder: with the credentials
				return g.printJSON(l.WithCredentials())
			}
			fmt.Fprintf(g.IO.Out, "lease %s: slot %d of %s, port %d, socket %s\n%s\n", l.ID, l.Slot, l.Template, l.Port, l.Socket, l.URL)
			return nil
		},
	}
}

func newLeaseLsCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "list the leases held now (without credentials)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			ls, err := c.Leases(cmd.Context())
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(ls)
			}
			for _, l := range ls {
				exp := "never"
				if !l.Expires.IsZero() {
					exp = l.Expires.Local().Format(time.TimeOnly)
				}
				fmt.Fprintf(g.IO.Out, "%s  %-12s slot %-4d port %-5d holder %-20s expires %s kept=%v\n", l.ID, l.Template, l.Slot, l.Port, l.Holder, exp, l.Kept)
			}
			return nil
		},
	}
}

// RunLease asks the daemon for a lease.
func RunLease(ctx context.Context, g *Globals, req api.LeaseRequest) (*api.Lease, error) {
	c, _, err := g.daemon(ctx, false)
	if err != nil {
		return nil, err
	}
	if req.Holder == "" {
		host, _ := os.Hostname()
		req.Holder = fmt.Sprintf("%s:%d", host, os.Getppid())
	}
	return c.Lease(ctx, req)
}

func newReleaseCmd(g *Globals) *cobra.Command {
	var unchanged, wait bool
	cmd := &cobra.Command{
		Use:   "release ID [--unchanged [--wait]]",
		Short: "return a lease; its slot is reset to pristine in the background",
		Example: `  pristine release "$PRISTINE_LEASE"
  pristine release "$PRISTINE_LEASE" --unchanged   # nothing written: reused without a reset`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			release := c.Release
			if wait {
				release = c.ReleaseWait
			}
			res, err := release(cmd.Context(), args[0], unchanged)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(res)
			}
			what := "reset in the background"
			switch {
			case res.Checking:
				what = "checked in the background: handed out again if nothing was written, else reset"
			case !res.Reset:
				what = "unchanged, handed out again without a reset"
			}
			fmt.Fprintf(g.IO.Err, "released %s: %s\n", args[0], what)
			return nil
		},
	}
	cmd.Flags().BoolVar(&unchanged, "unchanged", false, "nothing was written: check that, and reuse the database without a reset")
	cmd.Flags().BoolVar(&wait, "wait", false, "with --unchanged: wait for the check and say whether the database was reused")
	return cmd
}
