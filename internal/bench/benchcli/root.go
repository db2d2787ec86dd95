// Package benchcli is the command tree of pristine-bench, the benchmarks of
// pristine kept out of the product binary: bench (every way of getting N
// copies side by side, the service section, the docs generator with its
// charts), soak, bench-archive, bench-capture, bench-fleet, overhead, fork
// (a fork's cost against the template's size, and leases/s of a fork),
// pertest (a test's own database against a shared one, per test),
// front-page (the README's sample and the benchmarks' summary from saved
// runs) and vs (two servers' saved runs side by side). It shares
// pristine's global flags, root, daemon and exit codes (internal/cli);
// pristine itself never imports it (docs/bench_test.go checks that).
package benchcli

import (
	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/cli"
)

// NewRoot builds pristine-bench's command tree, its commands writing to io.
func NewRoot(io cli.Stdio) *cobra.Command {
	g := &cli.Globals{IO: io}
	if g.IO.Out == nil || g.IO.Err == nil || g.IO.In == nil {
		g.IO = cli.OSStdio()
	}
	root := &cobra.Command{
		Use:   "pristine-bench",
		Short: "measure pristine on this machine, beside baselines run in the same command (docs/benchmarks.md)",
		Long: `pristine-bench measures pristine on the machine it runs on, always beside a
baseline in the same invocation, and writes the figures of docs/benchmarks.md,
docs/capture.md, docs/archive-format.md and docs/fleet.md. It runs pristine
(bin/pristine beside it, else pristine on $PATH) where a measurement needs the
binary or a daemon.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cli.AddGlobalFlags(root, g)
	cobra.EnableCommandSorting = false
	root.AddCommand(newBenchCmd(g), newSoakCmd(g), newBenchArchiveCmd(g), newBenchCaptureCmd(g), newBenchFleetCmd(g), newOverheadCmd(g), newForkCmd(g), newPertestCmd(g), newFrontPageCmd(g), newVsCmd(g))
	root.SetOut(g.IO.Out)
	root.SetErr(g.IO.Err)
	root.SetIn(g.IO.In)
	root.SetUsageTemplate(root.UsageTemplate() + cli.ExitCodesHelp)
	return root
}

// Main runs pristine-bench's command line on the process's streams and
// returns the exit code (pristine's table: `pristine --help`).
func Main(args []string) int { return cli.Execute(NewRoot(cli.OSStdio()), args) }
