package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/demorun"
	"github.com/pristinedb/pristine/internal/scratch"
	"strings"
)

// DemoFlags are the flags of `pristine demo`.
type DemoFlags struct {
	Slots       int
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
			printDemo(g.IO.Out, res)
			return nil
		},
	}
	cmd.Flags().IntVar(&f.Slots, "slots", 200, "pool size")
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
				if err := scratch.Down(context.Background(), root); err != nil {
					g.stderrf("pristine demo: scratch down: %v", err)
				}
			}()
		}
	}
	st, err := g.openBuilder(ctx, "auto")
	if err != nil {
		return nil, err
	}
	return demorun.Demo(ctx, st, demorun.DemoOptions{Slots: f.Slots, Scale: f.Scale, Runs: f.Runs, FreshScratch: fresh, Baseline: !f.NoBaseline, Log: g.IO.Err})
}

func printDemo(w io.Writer, r *demorun.DemoResult) {
	// MariaDB's versions name it ("10.11.19-MariaDB-..."), MySQL's do not.
	server, baseline := "MariaDB", "mariadb-dump \\| mariadb"
	if !strings.Contains(r.Server, "MariaDB") {
		server, baseline = "MySQL", "mysqldump \\| mysql"
	}
	fmt.Fprintf(w, "\npristine demo: %s %s, %s backend, %d cores\n\n", server, r.Server, r.Backend, runtime.NumCPU())
	fmt.Fprintf(w, "| step | pristine | %s | ratio |\n|---|---|---|---|\n", baseline)
	built := "built"
	if !r.TemplateBuilt {
		built = "cached; first build took"
	}
	fmt.Fprintf(w, "| demo template (51 tables, %.0f MB on disk) | %s %.2f s | | |\n", float64(r.TemplateBytes)/(1<<20), built, r.TemplateSeconds)
	base, ratio := "not run", ""
	if r.DumpLoadSeconds > 0 {
		base = fmt.Sprintf("%.0f s (1 copy measured: %.2f s, x %d)", r.DumpLoad200Proj, r.DumpLoadSeconds, r.Slots)
		ratio = fmt.Sprintf("%.0fx", r.SpeedupVsDumpLd)
	}
	fmt.Fprintf(w, "| %d slots ready, every slot answered (median of %d) | %.2f s | %s | %s |\n", r.Slots, len(r.Runs), r.PoolUpSeconds, base, ratio)
	fmt.Fprintf(w, "| from the SQL dump to %d slots | %.2f s | | |\n", r.Slots, r.FromSQLSeconds)
	fmt.Fprintf(w, "| lease of a ready slot, p50 / p99 | %.2f / %.2f ms | | |\n", r.LeaseP50MS, r.LeaseP99MS)
	once := ""
	if r.DumpLoadSeconds > 0 {
		once = fmt.Sprintf("%.2f s", r.DumpLoadSeconds)
	}
	fmt.Fprintf(w, "| reset of a released slot, all %d at once, p50 / p99 (median of %d) | %.0f / %.0f ms | %s | |\n", r.Slots, len(r.Runs), r.ResetP50MS, r.ResetP99MS, once)
	fmt.Fprintf(w, "| resident memory per slot (RSS), mean / max | %.1f / %.1f MB | | |\n", r.RSSMeanMB, r.RSSMaxMB)
	fmt.Fprintf(w, "| memory per slot with the shared code divided among slots (PSS), mean | %.1f MB | | |\n", r.PSSMeanMB)
	fmt.Fprintf(w, "| server CPU per slot, from exec to ready and leased (user + system), mean | %.0f ms | | |\n", r.StartCPUMS)
	if r.SlotAgeSec > 0 {
		fmt.Fprintf(w, "| of which waiting for the rest of the pool: idle CPU per slot x mean slot age | %.1f ms/s x %.0f s = %.0f ms | start alone: %.0f ms | |\n",
			r.IdleCPUMSPerSec, r.SlotAgeSec, r.IdleCPUMSPerSec*r.SlotAgeSec, max(r.StartCPUMS-r.IdleCPUMSPerSec*r.SlotAgeSec, 0))
	}
	fmt.Fprintf(w, "| first query on a leased slot (%d rows counted) | %.2f ms | | |\n", r.RowsInFirstTable, r.QueryMS)
	fmt.Fprintf(w, "\n| run | state | %d slots ready | reset p50 / p99 | load average before | after |\n|---:|---|---:|---:|---|---|\n", r.Slots)
	for i, run := range r.Runs {
		fmt.Fprintf(w, "| %d | %s | %.2f s | %.0f / %.0f ms | %s | %s |\n", i+1, run.State, run.PoolUpSeconds, run.ResetP50MS, run.ResetP99MS, run.LoadBefore, run.LoadAfter)
	}
	fmt.Fprintf(w, "\nLoad average (1, 5, 15 min) before the demo: %s, after: %s (%d cores).\n", r.LoadBefore, r.LoadAfter, runtime.NumCPU())
}
