package benchcli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/bench"
	"github.com/pristinedb/pristine/internal/cli"
	"github.com/pristinedb/pristine/internal/stats"
)

func newPertestCmd(g *cli.Globals) *cobra.Command {
	opt := bench.PertestOptions{}
	cmd := &cobra.Command{
		Use:   "pertest",
		Short: "what a database of its own costs a test: N tests each with its own database against the same N on one shared database",
		Long: `pertest runs --tests tests one after another, each leasing a database of its own
(lease, connect, its queries, close, release), then the same tests on one database
they share, in the same run, through the daemon. It reports the median overhead
on the test's thread (lease + connect + release), each part's median, the median
test on each side and their ratio. The tests read (released unchanged) unless
--write (each inserts a row and is released dirty: its database is reset).
The template (one table of 100 rows) is built the first time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.Daemon(cmd.Context(), true)
			if err != nil {
				return err
			}
			res, err := bench.Pertest(cmd.Context(), c, opt)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.PrintJSON(res)
			}
			fmt.Fprintf(g.IO.Out, "| client | tests | pool | writes | set | work | prefetch | lease / connect / release p50 | overhead p50 (p90) | test p50 own / shared | ratio | run own / shared | load before -> after | machine |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
			fmt.Fprintf(g.IO.Out, "| Go | %d | %d | %v | %v | %.0f ms | %v | %.2f / %.2f / %.2f ms | %.2f (%.2f) ms | %.2f / %.2f ms | %.1fx | %.2f / %.2f s | %s -> %s | %s |\n",
				res.Tests, res.PoolSize, res.Write, res.Set, res.WorkMS, res.Prefetch, res.LeaseP50MS, res.ConnectP50MS, res.ReleaseP50MS,
				res.OverheadP50MS, res.OverheadP90MS, res.OwnTestP50MS, res.SharedTestP50MS, res.Ratio,
				res.OwnSeconds, res.SharedSeconds, res.LoadBefore, res.LoadAfter, stats.ReadHost())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opt.Tests, "tests", 200, "tests on each side")
	fl.IntVar(&opt.Size, "size", 4, "pool size, when no pool of the benchmark's template is up")
	fl.DurationVar(&opt.Work, "work", 0, "how long each test works after its query (a sleep), on both sides, e.g. 10ms")
	fl.BoolVar(&opt.Write, "write", false, "each test inserts a row and is released dirty (reset), instead of reading and being released unchanged")
	fl.BoolVar(&opt.Set, "set", false, "each test runs a SET of its session first (on both sides), as most drivers do when they connect: the unchanged check then reads the server's global variables again")
	fl.BoolVar(&opt.Prefetch, "prefetch", true, "take the next test's lease and its connection while a test runs, and release in the background")
	return cmd
}
