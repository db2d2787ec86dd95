package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/server"
)

func init() { register(newLeaseCmd); register(newReleaseCmd) }

func newLeaseCmd(g *Globals) *cobra.Command {
	var req server.LeaseRequest
	var ttl, wait time.Duration
	cmd := &cobra.Command{
		Use:   "lease [--template NAME]",
		Short: "hand out a pristine database and print its DSN and environment",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			req.TTL, req.Wait = ttl.Seconds(), wait.Seconds()
			l, err := RunLease(cmd.Context(), g, req)
			if err != nil {
				return err
			}
			if g.JSON {
				return printJSON(l)
			}
			fmt.Fprintf(os.Stderr, "lease %s: slot %d of %s (release with `pristine release %s`)\n", l.ID, l.Slot, l.Template, l.ID)
			// Shell syntax, so `eval "$(pristine lease)"` sets the variables.
			fmt.Printf("export PRISTINE_LEASE=%s\n", shellQuote(l.ID))
			fmt.Printf("export DSN=%s\n", shellQuote(l.DSN))
			for _, e := range l.Env {
				k, v, _ := strings.Cut(e, "=")
				fmt.Printf("export %s=%s\n", k, shellQuote(v))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Template, "template", "", "template whose pool to lease from (default: the only pool)")
	cmd.Flags().StringVar(&req.Holder, "holder", "", "who holds the lease, for status and logs")
	cmd.Flags().DurationVar(&ttl, "ttl", 30*time.Minute, "the lease is reclaimed after this long")
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "how long to wait for a free slot")
	return cmd
}

// RunLease asks the daemon for a lease.
func RunLease(ctx context.Context, g *Globals, req server.LeaseRequest) (*pool.Lease, error) {
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
	return &cobra.Command{
		Use:   "release ID",
		Short: "return a lease; its slot is reset to pristine in the background",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			if err := c.Release(cmd.Context(), args[0]); err != nil {
				return err
			}
			if g.JSON {
				return printJSON(map[string]string{"released": args[0]})
			}
			fmt.Fprintf(os.Stderr, "released %s\n", args[0])
			return nil
		},
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
