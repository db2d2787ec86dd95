package benchcli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/cli"

	"github.com/pristinedb/pristine/internal/bench/archivebench"
)

func newBenchArchiveCmd(g *cli.Globals) *cobra.Command {
	var opts archivebench.Options
	cmd := &cobra.Command{
		Use:   "bench-archive",
		Short: "measure pack/unpack against mbstream -x and cat on a ~1 GB data directory",
		Long: `Build a ~1 GB data directory with a throwaway mariadbd on /dev/shm (or take
--dir), stream it with mariadb-backup --stream=xbstream, pack it, then measure
on tmpfs: mbstream -x, pristine's xbstream reader, pristine unpack (file,
stream, pipe from pack), cat | cat, the xbstream through a pipe into
mbstream -x and into pristine, and unpack from an archive on a
loop-mounted XFS with reflink. Each step runs --runs times after a warm-up;
medians are reported. Everything created is removed at the end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			exe, err := cli.PristineExe()
			if err != nil {
				return fmt.Errorf("bench-archive: %w", err)
			}
			opts.Exe = exe
			if g.ErrIsTerminal() {
				opts.Log = g.IO.Err
			}
			rep, err := archivebench.Run(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.PrintJSON(rep)
			}
			return archivebench.Markdown(g.IO.Out, rep)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "measure this data directory instead of generating one")
	cmd.Flags().IntVar(&opts.SizeMB, "size-mb", 1024, "size of the generated data directory in MB")
	cmd.Flags().IntVar(&opts.Runs, "runs", 3, "measured runs of each step (after one warm-up)")
	cmd.Flags().BoolVar(&opts.Disk, "disk", false, "also extract onto real disks until durable: ext4 under --disk-dir and an XFS image there")
	cmd.Flags().StringVar(&opts.DiskDir, "disk-dir", "/var/tmp", "directory on a real disk for --disk")
	return cmd
}
