package benchcli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/cli"

	"github.com/pristinedb/pristine/internal/bench"
)

func newSoakCmd(g *cli.Globals) *cobra.Command {
	opt := bench.SoakOptions{Log: g.IO.Err}
	cmd := &cobra.Command{
		Use:   "soak --template NAME",
		Short: "concurrent clients run lease -> check canary -> write -> release cycles through the daemon",
		Long: `soak plays a parallel test suite against a pool: each client leases a database,
checks a canary table's checksum (a lease that is not pristine is counted), writes,
holds the lease for --hold, and releases it dirty. It reports pristine leases per
second and lease waits, and, when it brought the pool up itself, that no server or
file is left after the pool goes down. Exit status 1 on any non-pristine lease.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, root, err := g.Daemon(cmd.Context(), true)
			if err != nil {
				return err
			}
			res, err := bench.Soak(cmd.Context(), c, root, opt)
			if err != nil {
				return err
			}
			if g.JSON {
				if err := g.PrintJSON(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(g.IO.Out, "| clients | cycles | pool | hold | leases/s | lease wait p50 / p99 / max | reset p50 / p99 | not pristine | errors | left behind |\n|---|---|---|---|---|---|---|---|---|---|\n")
				fmt.Fprintf(g.IO.Out, "| %d | %d | %d | %.0f ms | %.1f | %.2f / %.2f / %.1f ms | %.0f / %.0f ms | %d | %d | servers %v, files %v |\n",
					res.Clients, res.Cycles, res.PoolSize, res.HoldMS, res.LeasesPerSec, res.LeaseP50MS, res.LeaseP99MS, res.LeaseMaxMS,
					res.ResetP50MS, res.ResetP99MS, res.NotPristine, res.Errors, len(res.LeftServers), res.LeftPoolFiles)
				fmt.Fprintf(g.IO.Out, "\n| pattern | fresh copies/s (second half) | resets by path | CPU per reset: machine / pristine | verified (differed) | load before -> after |\n|---|---|---|---|---|---|\n")
				pattern := res.Pattern
				if res.Unchanged {
					pattern += ", released unchanged"
				}
				fmt.Fprintf(g.IO.Out, "| %s | %.1f (%.1f) | %v | %.1f / %.1f ms | %d (%d) | %s -> %s |\n", pattern, res.FreshPerSec, res.SteadyPerSec, res.Resets, res.CPUPerResetMS, res.PristineCPUPerResetMS, res.Verified, res.NotVerified, res.LoadBefore, res.LoadAfter)
			}
			if res.NotVerified > 0 {
				return fmt.Errorf("soak failed: %d of %d sampled leases differ from the reference lease (first: %s)", res.NotVerified, res.Verified, res.FirstDiff)
			}
			if res.NotPristine > 0 || res.Errors > 0 || len(res.LeftServers) > 0 || res.LeftPoolFiles {
				return fmt.Errorf("soak failed: %d leases not pristine, %d errors (first: %s), %d servers and pool files=%v left", res.NotPristine, res.Errors, res.FirstError, len(res.LeftServers), res.LeftPoolFiles)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opt.Template, "template", "demo", "template to soak")
	cmd.Flags().IntVar(&opt.Clients, "clients", 8, "concurrent clients")
	cmd.Flags().IntVar(&opt.Cycles, "cycles", 2000, "lease cycles in all")
	cmd.Flags().IntVar(&opt.Size, "size", 32, "pool size, when no pool of the template is up")
	cmd.Flags().DurationVar(&opt.Hold, "hold", 200*time.Millisecond, "how long each client keeps a lease")
	cmd.Flags().StringVar(&opt.Pattern, "pattern", bench.PatternDefault, "what each cycle writes: default (one row of the canary table) or 3tables+temp (one row of each of 3 tables, and a temporary table)")
	cmd.Flags().BoolVar(&opt.Unchanged, "unchanged", false, "release every lease as unchanged (as the Spring and Node clients do by default): the daemon checks each database, finds the cycle's write and resets it")
	cmd.Flags().IntVar(&opt.VerifyEvery, "verify-every", 50, "verify one lease in n (schema and rows) against a lease kept untouched, after the timed cycles; 0: none")
	return cmd
}
