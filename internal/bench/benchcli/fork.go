package benchcli

import (
	"context"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/bench"
	"github.com/pristinedb/pristine/internal/cli"
)

func newForkCmd(g *cli.Globals) *cobra.Command {
	opt := bench.ForkOptions{Soak: bench.SoakOptions{Pattern: bench.PatternDefault}}
	cmd := &cobra.Command{
		Use:   "fork",
		Short: "fork time of a written lease of the demo template and of a larger one, and leases/s of a fork against its template",
		Long: `Builds the demo template at --scale and at --scale x --factor (kept in the root
as builds are), and through an in-process daemon times --forks forks of each:
lease, delete a row, POST /v1/leases/{id}/fork. It reports the p50 of each
(the daemon's time and the client's) and their ratio, which is 1 when a fork's
cost does not grow with the data. Then it runs the same lease loop (the soak's:
--clients clients, --cycles leases, a pool of --size, each lease checked,
written and held --hold) on the template built from SQL and on a fork of it,
and reports both leases/s and their ratio. The forks are removed at the end.

A root that cannot clone cheaply gets a RAM-backed btrfs scratch filesystem
for the run, sized for the two templates, removed at the end (and the
templates with it). A quick run: --scale 0.1 --forks 3 --cycles 100.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFork(cmd.Context(), g, opt)
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&opt.Scale, "scale", 1, "demo template data scale (1 = 51 tables, about 110 MB)")
	fl.Float64Var(&opt.Factor, "factor", 10, "the second template's scale, as a multiple of --scale")
	fl.IntVar(&opt.Forks, "forks", 5, "forks timed per template (p50)")
	fl.IntVar(&opt.Soak.Clients, "clients", 4, "lease loop: concurrent clients")
	fl.IntVar(&opt.Soak.Cycles, "cycles", 400, "lease loop: leases per template")
	fl.IntVar(&opt.Soak.Size, "size", 8, "lease loop: pool size")
	fl.DurationVar(&opt.Soak.Hold, "hold", 50*time.Millisecond, "lease loop: how long each client keeps a lease")
	fl.IntVar(&opt.Soak.VerifyEvery, "verify-every", 0, "lease loop: verify one lease in n against a lease kept untouched, after the timed cycles; 0: none")
	return cmd
}

func runFork(ctx context.Context, g *cli.Globals, opt bench.ForkOptions) error {
	opt.Log = g.IO.Err
	// About 150 MB on disk per unit of scale, built twice over (the
	// build's data and the template), plus the forks and the pools' writes.
	size := int64(2<<30) + int64(math.Ceil(opt.Scale*(1+opt.Factor)*0.4*float64(1<<30)))
	st, done, err := cloningBuilder(ctx, g, size)
	if err != nil {
		return err
	}
	defer done()
	rep, err := bench.Fork(ctx, st, opt)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.PrintJSON(rep)
	}
	return bench.ForkMarkdown(g.IO.Out, rep)
}
