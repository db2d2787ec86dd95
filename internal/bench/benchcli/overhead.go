package benchcli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/bench/overheadbench"
	"github.com/pristinedb/pristine/internal/cli"
	"github.com/pristinedb/pristine/internal/scratch"
	"github.com/pristinedb/pristine/internal/template"
)

// overheadFlags are the flags of `pristine-bench overhead`.
type overheadFlags struct {
	opt    overheadbench.Options
	bounds overheadbench.Bounds
	check  bool
}

func newOverheadCmd(g *cli.Globals) *cobra.Command {
	f := overheadFlags{bounds: overheadbench.DefaultBounds}
	cmd := &cobra.Command{
		Use:   "overhead",
		Short: "pristine's own cost per slot start and per in-place reset, as ratios to bare servers in the same run",
		Long: `Builds the demo template (--scale), starts --slots bare servers on plain
copy-on-write clones of it (mariadbd with a slot's options, nothing else), then
a pool of as many slots of it through an in-process daemon, and compares their
CPU (this process and the servers, every thread, from schedstat) and wall. Then
it deletes a row of one table and restores it, --resets times: on a bare server
by DISCARD TABLESPACE, a clone of the template's .ibd and IMPORT TABLESPACE; in
the pool by releasing a lease and waiting for the slot's in-place reset.

The figures are ratios within the run, so a loaded machine moves them little.
--check fails (exit 1) when a ratio passes its bound (--max-*), or a reset did
not run in place; scripts/test.sh runs it. A root that cannot clone cheaply
gets a RAM-backed btrfs scratch filesystem for the run, removed at the end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOverhead(cmd.Context(), g, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.opt.Slots, "slots", 8, "bare servers and slots started")
	fl.Float64Var(&f.opt.Scale, "scale", 0.1, "demo template data scale (1 = about 110 MB)")
	fl.IntVar(&f.opt.Resets, "resets", 5, "resets of one changed table timed on each side; medians are compared")
	fl.BoolVar(&f.check, "check", false, "exit 1 when a ratio passes its bound")
	fl.Float64Var(&f.bounds.StartCPU, "max-start-cpu", f.bounds.StartCPU, "most pristine's CPU per slot start beyond a bare start may be, as a ratio to the bare start's")
	fl.Float64Var(&f.bounds.StartWall, "max-start-wall", f.bounds.StartWall, "most the pool's start may take, as a ratio to the bare servers' start")
	fl.Float64Var(&f.bounds.ResetCPU, "max-reset-cpu", f.bounds.ResetCPU, "most an in-place reset's CPU may be, as a ratio to the bare restore's")
	fl.Float64Var(&f.bounds.ResetWall, "max-reset-wall", f.bounds.ResetWall, "most an in-place reset's wall may be, as a ratio to the bare restore's")
	return cmd
}

func runOverhead(ctx context.Context, g *cli.Globals, f overheadFlags) error {
	if g.ErrIsTerminal() || f.check {
		f.opt.Log = g.IO.Err
	}
	st, done, err := cloningBuilder(ctx, g, 4<<30)
	if err != nil {
		return err
	}
	defer done()
	rep, err := overheadbench.Run(ctx, st, f.opt)
	if err != nil {
		return err
	}
	if g.JSON {
		err = g.PrintJSON(rep)
	} else {
		err = overheadbench.Markdown(g.IO.Out, rep)
	}
	if err != nil {
		return err
	}
	if f.check {
		return rep.Check(f.bounds)
	}
	return nil
}

// cloningBuilder opens the root's template store on a filesystem that
// clones cheaply: the root's own, or, as root on one that cannot, a
// RAM-backed btrfs scratch filesystem of size bytes that done takes down.
func cloningBuilder(ctx context.Context, g *cli.Globals, size int64) (*template.Builder, func(), error) {
	st, err := g.OpenBuilder(ctx)
	if err != nil {
		return nil, nil, err
	}
	if st.Catalog().Backend().Name() != "copy" || os.Geteuid() != 0 {
		return st, func() {}, nil
	}
	root := st.Catalog().Root()
	if _, err := scratch.Up(ctx, root, scratch.Options{Size: size, FS: "btrfs"}); err != nil {
		return nil, nil, fmt.Errorf("%s cannot clone cheaply, and a scratch filesystem could not be made: %w", root.Data(), err)
	}
	done := func() {
		if _, err := scratch.Down(context.Background(), root); err != nil {
			g.Errf("pristine-bench: scratch down: %v", err)
		}
	}
	if st, err = g.OpenBuilder(ctx); err != nil {
		done()
		return nil, nil, err
	}
	return st, done, nil
}
