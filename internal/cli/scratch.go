package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/scratch"
)

func newScratchCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scratch",
		Short: "create or remove a RAM-backed btrfs/XFS filesystem for the root's data (needs root)",
		Long: `scratch manages a copy-on-write filesystem in RAM for pristine's data: a sparse
image in /dev/shm, formatted btrfs (default) or XFS with reflink, loop-mounted at
<root>/data. "up" creates and mounts it, "down" unmounts it and deletes the image
(everything on it is lost), "status" describes it. pristine touches only the image
and mount it recorded in <root>/scratch.json.`,
	}
	cmd.AddCommand(newScratchUpCmd(g), newScratchDownCmd(g), newScratchStatusCmd(g))
	return cmd
}

func newScratchUpCmd(g *Globals) *cobra.Command {
	var size string
	var move bool
	var opt scratch.Options
	cmd := &cobra.Command{
		Use:   "up [--size 8G] [--fs btrfs|xfs] [--dir /dev/shm] [--compress zstd[:LEVEL]] [--move]",
		Short: "create and mount the scratch filesystem at <root>/data",
		Example: `  sudo pristine scratch up --size 8G
  sudo pristine scratch up --size 16G --fs xfs --move   # keep the templates built before
  sudo pristine scratch up --size 16G --compress zstd   # large schemas: btrfs zstd compression
  sudo pristine scratch up --size 64G --dir /var/tmp --compress zstd:3   # on disk, mounted again after a reboot by the same command`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := parseBytes(size)
			if err != nil {
				return err
			}
			opt.Size = n
			root, err := g.openRoot()
			if err != nil {
				return err
			}
			if g.ErrIsTerminal() {
				g.stderrf("scratch: making a %s %s filesystem in %s", scratch.FormatSize(n), fsOrDefault(opt.FS), dirOrDefault(opt.Dir))
			}
			up := scratch.Up
			if move {
				cur, _ := scratch.Status(root)
				if left, err := scratch.DataEntries(root); err == nil && len(left) > 0 && cur != nil && !cur.Up {
					up = func(ctx context.Context, root *rootdir.Root, opt scratch.Options) (*scratch.Info, error) {
						return scratchUpMoving(ctx, g, root, opt)
					}
				}
			}
			info, err := up(cmd.Context(), root, opt)
			if err != nil {
				return err
			}
			return printScratch(g, info)
		},
	}
	cmd.Flags().BoolVar(&move, "move", false, "move the templates already in the root's data directory onto the new filesystem")
	cmd.Flags().StringVar(&size, "size", "8G", "size of the filesystem; the image is sparse, so RAM is used only as data is written")
	cmd.Flags().StringVar(&opt.FS, "fs", "btrfs", "filesystem: btrfs (snapshots) or xfs (reflink)")
	cmd.Flags().StringVar(&opt.Dir, "dir", "/dev/shm", "directory that holds the image file")
	cmd.Flags().StringVar(&opt.Compress, "compress", "", "btrfs transparent compression: zstd (level 3) or zstd:LEVEL (1-15); less RAM or disk per template and slot, for some CPU")
	return cmd
}

func newScratchDownCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "unmount the scratch filesystem and delete its image (its data is lost)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := g.openRoot()
			if err != nil {
				return err
			}
			before, err := scratch.Status(root)
			if err != nil {
				return err
			}
			if pools, _ := os.ReadDir(filepath.Join(root.Data(), "pools")); before.Up && len(pools) > 0 {
				return fmt.Errorf("scratch down: %d pool(s) are up on %s (their clones are in %s): run `pristine pool down --all` first",
					len(pools), root.Path, filepath.Join(root.Data(), "pools"))
			}
			rep, err := scratch.Down(cmd.Context(), root)
			if err != nil {
				return err
			}
			if rep.Warning != "" {
				g.stderrf("scratch down: warning: %s", rep.Warning)
			}
			if g.JSON {
				return g.printJSON(map[string]any{"down": true, "removed_image": before.Image, "unmounted": before.Up, "warning": rep.Warning})
			}
			switch {
			case before.Image == "":
				fmt.Fprintln(g.IO.Out, "scratch: nothing to take down")
			case before.Up:
				fmt.Fprintf(g.IO.Out, "scratch: unmounted %s and deleted %s\n", before.Mount, before.Image)
			default:
				fmt.Fprintf(g.IO.Out, "scratch: cleaned up the leftovers of %s\n", before.Image)
			}
			return nil
		},
	}
}

func newScratchStatusCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "describe the scratch filesystem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := g.openRoot()
			if err != nil {
				return err
			}
			info, err := scratch.Status(root)
			if err != nil {
				return err
			}
			return printScratch(g, info)
		},
	}
}

// printScratch prints a scratch filesystem's Info as JSON or one line.
func printScratch(g *Globals, info *scratch.Info) error {
	if info.Warning != "" {
		g.stderrf("pristine: warning: %s", info.Warning)
	}
	if g.JSON {
		return g.printJSON(info)
	}
	switch {
	case info.Up:
		note := ""
		switch {
		case info.AlreadyUp:
			note = " (already up)"
		case info.Remounted:
			note = " (mounted again from " + info.Image + ", with what it held)"
		}
		fs := info.FS
		if info.Compress != "" {
			fs += " compress=" + info.Compress
		}
		ra := ""
		if info.ReadaheadKB > 0 {
			ra = fmt.Sprintf(", readahead %dK", info.ReadaheadKB)
		}
		fmt.Fprintf(g.IO.Out, "scratch: %s of %s at %s on %s, image %s; %s used, %s free, %s of RAM%s%s\n",
			fs, scratch.FormatSize(info.Size), info.Mount, info.Loop, info.Image,
			scratch.FormatSize(info.Used), scratch.FormatSize(info.Avail), scratch.FormatSize(info.Memory), ra, note)
	case info.Stale:
		fmt.Fprintf(g.IO.Out, "scratch: recorded (%s) but not mounted; run \"pristine scratch down\" to clean up\n", info.Image)
	case info.RootCompress != "":
		fmt.Fprintf(g.IO.Out, "scratch: not up; %s is a plain directory on the root's filesystem (%s, compress=%s: templates built there are compressed)\n", info.Mount, info.RootFS, info.RootCompress)
	default:
		fs := ""
		if info.RootFS != "" {
			fs = " (" + info.RootFS + ")"
		}
		fmt.Fprintf(g.IO.Out, "scratch: not up; %s is a plain directory on the root's filesystem%s\n", info.Mount, fs)
	}
	if !info.Up && info.RootFS == "btrfs" && info.ReadaheadKB > scratch.ReadaheadKB {
		// btrfs reads ahead at least 4 MiB, and a clone's cached pages
		// are its own: every slot's start reads pages it never uses.
		fmt.Fprintf(g.IO.Out, "scratch: the root's btrfs reads ahead %d KiB, which every slot's start pays for in pages it never reads; slots start faster at %d KiB, as on a scratch filesystem (echo %d > %s; it lasts until the filesystem is mounted again)\n",
			info.ReadaheadKB, scratch.ReadaheadKB, scratch.ReadaheadKB, info.ReadaheadFile)
	}
	return nil
}

func fsOrDefault(s string) string {
	if s == "" {
		return "btrfs"
	}
	return s
}

func dirOrDefault(s string) string {
	if s == "" {
		return "/dev/shm"
	}
	return s
}
