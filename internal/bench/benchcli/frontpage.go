package benchcli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/bench"
	"github.com/pristinedb/pristine/internal/cli"
)

func newFrontPageCmd(g *cli.Globals) *cobra.Command {
	var run, repo, benchRuns string
	cmd := &cobra.Command{
		Use:   "front-page --run docs/runs/FILE.json",
		Short: "rewrite the README's sample output and the summary table of docs/benchmarks.md from a saved run of pristine demo --json",
		Long: `front-page renders the README's sample output and the summary table that opens
docs/benchmarks.md from saved runs and writes them between their marker
comments; it measures nothing. The sample comes from --run (a file that
` + "`pristine demo --json`" + ` printed, as scripts/readme-sample.sh saves it); the
summary from --run and the method comparisons (docs/bench/*/bench.json) its
block already names. --bench-runs a.json,b.json rewrites the method comparison
of docs/benchmarks.md from those runs of pristine-bench bench instead
(scripts/bench.sh). docs/frontpage_test.go fails when a block differs from what
its saved runs render to.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if benchRuns != "" {
				if err := bench.WriteBlock(repo, bench.BenchRunsBlock, benchList(benchRuns)); err != nil {
					return err
				}
				fmt.Fprintf(g.IO.Err, "front-page: the method comparison of docs/benchmarks.md rewritten from %s\n", benchRuns)
				return nil
			}
			if run == "" {
				return fmt.Errorf("%w: front-page: --run names the saved demo run (docs/runs/FILE.json)", cli.ErrUsage)
			}
			if err := bench.WriteFrontPage(repo, run); err != nil {
				return err
			}
			fmt.Fprintf(g.IO.Err, "front-page: README.md and docs/benchmarks.md rewritten from %s\n", run)
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "the saved demo run, relative to the repository (docs/runs/FILE.json)")
	cmd.Flags().StringVar(&benchRuns, "bench-runs", "", "rewrite the method comparison of docs/benchmarks.md from these saved runs of pristine-bench bench (comma-separated bench.json files, relative to the repository)")
	cmd.Flags().StringVar(&repo, "repo", ".", "the repository's top directory")
	return cmd
}
