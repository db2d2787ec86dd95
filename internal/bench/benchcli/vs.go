package benchcli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/bench"
	"github.com/pristinedb/pristine/internal/cli"
)

func newVsCmd(g *cli.Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "vs DIR_A DIR_B",
		Short: "print two servers' runs side by side with their ratios (scripts/bench-servers.sh --vs)",
		Long: `vs reads two servers' saved runs, each a directory with the demo.json that
` + "`pristine demo --json`" + ` printed and, when a soak followed, the soak.json of
` + "`pristine-bench soak --json`" + `, and prints their figures side by side with the
ratio A/B and the MySQL parity bounds (A MySQL, B MariaDB): slots ready within
3x, the reset's p50 within 2x, fresh copies per second over the soak's second
half at least 0.6x. It measures nothing; scripts/bench-servers.sh --vs runs
both sides and calls it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := bench.ReadServerRun(args[0])
			if err != nil {
				return fmt.Errorf("vs: %w", err)
			}
			b, err := bench.ReadServerRun(args[1])
			if err != nil {
				return fmt.Errorf("vs: %w", err)
			}
			rows := bench.CompareServers(a, b)
			if g.JSON {
				return g.PrintJSON(rows)
			}
			return bench.WriteServerVs(g.IO.Out, filepath.Base(args[0]), filepath.Base(args[1]), a, b, rows)
		},
	}
}
