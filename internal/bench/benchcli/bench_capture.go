package benchcli

import (
	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/cli"

	"github.com/pristinedb/pristine/internal/bench/capturebench"
)

func newBenchCaptureCmd(g *cli.Globals) *cobra.Command {
	var opts capturebench.Options
	cmd := &cobra.Command{
		Use:   "bench-capture",
		Short: "time template capture from a live server against mariadb-dump, mydumper and mariadb-backup",
		Long: `Builds two sources in a temporary root on /dev/shm (the demo template and a
foreign-key-heavy dataset of about 5 million rows), starts a server on each and
times, on the same source: mariadb-dump | mariadb and mydumper | myloader into a
fresh server, mariadb-backup --stream | mbstream -x + --prepare, and pristine's
logical (LOAD DATA and INSERT) and physical capture (mariadb-backup writing the
files, and its stream through pristine's xbstream reader), each a whole
template build.
Prints a markdown table (or --json). Everything created is removed at the end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.ErrIsTerminal() {
				opts.Log = g.IO.Err
			}
			rep, err := capturebench.Run(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.PrintJSON(rep)
			}
			return capturebench.Markdown(g.IO.Out, rep)
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&opts.FKScale, "fk-scale", 1, "size of the foreign-key dataset (1 = about 5.2 million rows)")
	fl.Float64Var(&opts.DemoScale, "demo-scale", 1, "size of the demo dataset (1 = about 110 MB)")
	fl.IntVar(&opts.Runs, "runs", 1, "timed runs of each method; the median is reported")
	fl.IntVar(&opts.Workers, "workers", 4, "parallel connections for pristine, mydumper and myloader")
	fl.StringVar(&opts.Only, "only", "", "run only the methods whose names contain this (the baselines always run)")
	fl.StringSliceVar(&opts.Datasets, "datasets", []string{"demo", "fk"}, "datasets to measure: demo, fk")
	fl.StringVar(&opts.Dir, "dir", "/dev/shm", "where the temporary root goes")
	return cmd
}
