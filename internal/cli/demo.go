package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/demorun"
	"github.com/pristinedb/pristine/internal/scratch"
)

// DemoFlags are the flags of `pristine demo`.
type DemoFlags struct {
	Slots       int
	DBsPerSlot  int
	Runs        int
	Scale       float64
	NoBaseline  bool
	Keep        bool
	ScratchSize string
}

func newDemoCmd(g *Globals) *cobra.Command {
	var f DemoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "the main job: build the demo template, bring up a pool, lease, query, release, and time it against mariadb-dump | mariadb",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := RunDemo(cmd.Context(), g, f)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(res)
			}
			demorun.WriteText(g.IO.Out, res)
			return nil
		},
	}
	cmd.Flags().IntVar(&f.Slots, "slots", 200, "databases to bring up: the pool's size, or with --dbs-per-slot K, K databases in each of slots/K servers")
	cmd.Flags().IntVar(&f.DBsPerSlot, "dbs-per-slot", 1, "copies of the demo database in each slot's server (template build --dbs-per-slot)")
	cmd.Flags().IntVar(&f.Runs, "runs", 3, "bring the pool up, lease, reset and take it down this many times; the median is reported")
	cmd.Flags().Float64Var(&f.Scale, "scale", 1, "demo data scale (1 = 51 tables, about 110 MB)")
	cmd.Flags().BoolVar(&f.NoBaseline, "no-baseline", false, "skip timing mariadb-dump | mariadb")
	cmd.Flags().BoolVar(&f.Keep, "keep", false, "keep the scratch filesystem and template afterwards")
	cmd.Flags().StringVar(&f.ScratchSize, "scratch-size", "8G", "size of the RAM-backed scratch filesystem made when the root cannot reflink")
	return cmd
}

// RunDemo runs the main job. When the root's filesystem cannot clone
// cheaply and pristine runs as root, it makes a RAM-backed btrfs scratch
// filesystem first and removes it afterwards.
func RunDemo(ctx context.Context, g *Globals, f DemoFlags) (*demorun.DemoResult, error) {
	root, err := g.openRoot()
	if err != nil {
		return nil, err
	}
	fresh := false
	if b, err := cow.Detect(root, root.Data()); err == nil && b.Name() == "copy" && os.Geteuid() == 0 {
		// The root's own templates would be hidden by the scratch mount (and
		// pristine scratch down at the end would not bring them back): the
		// demo runs on a root of its own beside it.
		if left, err := scratch.DataEntries(root); err == nil && len(left) > 0 {
			demoRoot := root.Path + "-demo"
			g.stderrf("pristine demo: %s holds templates; running the demo on its own root, %s", root.Data(), demoRoot)
			g2 := *g
			g2.Root = demoRoot
			g, root = &g2, nil
			if root, err = g.openRoot(); err != nil {
				return nil, err
			}
		}
		size, err := parseBytes(f.ScratchSize)
		if err != nil {
			return nil, err
		}
		g.stderrf("pristine demo: %s cannot reflink; making a %s RAM-backed btrfs scratch filesystem", root.Data(), f.ScratchSize)
		if _, err := scratch.Up(ctx, root, scratch.Options{Size: size, FS: "btrfs"}); err != nil {
			return nil, err
		}
		fresh = true
		if !f.Keep {
			defer func() {
				if rep, err := scratch.Down(context.Background(), root); err != nil {
					g.stderrf("pristine demo: scratch down: %v", err)
				} else if rep.Warning != "" {
					g.stderrf("pristine demo: scratch down: warning: %s", rep.Warning)
				}
			}()
		}
	}
	st, err := g.openBuilder(ctx, "auto")
	if err != nil {
		return nil, err
	}
	res, err := demorun.Demo(ctx, st, demorun.DemoOptions{Slots: f.Slots, DBsPerSlot: f.DBsPerSlot, Scale: f.Scale, Runs: f.Runs, FreshScratch: fresh, Baseline: !f.NoBaseline, Log: g.IO.Err})
	if res != nil {
		v, c := versionCommit()
		res.Pristine = v + " (commit " + c + ")"
	}
	return res, err
}
