package benchcli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/cli"

	"github.com/pristinedb/pristine/internal/bench/ocibench"
)

func newBenchFleetCmd(g *cli.Globals) *cobra.Command {
	var opt ocibench.Options
	var workloads string
	cmd := &cobra.Command{
		Use:   "bench-fleet",
		Short: "time template push and pull through a registry on loopback (docker-registry) against cat of the same blobs",
		Long: `Builds the demo templates in the root (unless they are there), starts Debian's
docker-registry on a loopback port with its storage in /dev/shm, and times
template push, template pull, pull plus one server ready on a clone, and the
baseline: cat of the same blobs to /dev/null plus the same server start. Each
step runs --runs times after a warm-up; medians are reported. Run it on a
root whose data is on btrfs (pristine scratch up).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.OpenBuilder(cmd.Context())
			if err != nil {
				return err
			}
			st.Progress = nil
			opt.Workloads = strings.Split(workloads, ",")
			opt.InUse = cli.InUse(st)
			if g.ErrIsTerminal() || !g.JSON {
				opt.Log = g.IO.Err
			}
			rep, err := ocibench.Run(cmd.Context(), st, opt)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.PrintJSON(rep)
			}
			fmt.Fprintf(g.IO.Out, "backend %s, server %s, registry docker-registry on 127.0.0.1 (storage on tmpfs)\n\n", rep.Backend, rep.Server)
			fmt.Fprintln(g.IO.Out, "| workload | step | median s | runs |")
			fmt.Fprintln(g.IO.Out, "|---|---|---:|---|")
			for _, r := range rep.Rows {
				fmt.Fprintf(g.IO.Out, "| %s (%d MB archive) | %s | %.3f | %v |\n", r.Workload, r.Bytes>>20, r.Step, r.Median, fmtRuns(r.Runs))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&workloads, "workload", "demo,demo10", "workloads: demo (~110 MB), demo10 (~1 GB)")
	cmd.Flags().IntVar(&opt.Runs, "runs", 3, "measured runs of each step (after one warm-up)")
	return cmd
}

func fmtRuns(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%.3f", r)
	}
	return strings.Join(s, " ")
}
