package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/units"
	"github.com/pristinedb/pristine/internal/xbstream"
)

func newPackCmd(g *Globals) *cobra.Command {
	var opts archive.PackOptions
	cmd := &cobra.Command{
		Use:   "pack DIR > FILE",
		Short: "write a data directory as a pristine archive on stdout",
		Long: `Write DIR as a pristine archive (docs/archive-format.md) on standard output:
a pipe, a socket or a file. On the same reflink filesystem (XFS, btrfs) the
archive file shares blocks with DIR; through a pipe, data goes from the page
cache to the pipe without a copy. DIR must not change while it is packed:
pack a stopped data directory.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.OutIsTerminal() {
				return fmt.Errorf("%w: refusing to write an archive to a terminal; redirect stdout to a file or pipe", ErrUsage)
			}
			if g.ErrIsTerminal() {
				opts.Progress = g.IO.Err
			}
			st, err := archive.Pack(cmd.Context(), args[0], g.IO.Out, opts)
			if err != nil {
				return err
			}
			if g.JSON {
				return json.NewEncoder(g.IO.Err).Encode(st)
			}
			if g.ErrIsTerminal() {
				fmt.Fprintf(g.IO.Err, "packed %d files, %s of data into %s in %.2fs\n", st.Files, units.Bytes(st.DataBytes), units.Bytes(st.ArchiveBytes), st.Elapsed.Seconds())
			}
			for _, s := range st.Skipped {
				fmt.Fprintf(g.IO.Err, "pristine: skipped %s (not a file, directory or symlink)\n", s)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.Compress, "compress", false, "compress each extent with zstd (compressed extents cannot be cloned on unpack)")
	cmd.Flags().IntVar(&opts.Threads, "threads", 0, "extents read in parallel (default: number of CPUs)")
	cmd.Flags().Int64Var(&opts.ExtentSize, "extent-size", archive.DefaultExtent, "largest extent in bytes")
	return cmd
}

func newUnpackCmd(g *Globals) *cobra.Command {
	var opts archive.UnpackOptions
	var format, verify string
	var anyXbstream bool
	cmd := &cobra.Command{
		Use:   "unpack FILE|- DIR",
		Short: "extract a pristine archive or an xbstream into a new directory",
		Long: `Extract FILE (or standard input with -) into DIR, which must not exist or be
empty. The tree is built in a hidden directory beside DIR and renamed to DIR
only when it is complete and verified; on error DIR is left untouched.
Modes are pristine's, never the archive's: files 0600, directories 0700 (DIR
included), owned by you; no setuid, setgid or sticky bit is ever extracted.

--format auto recognises pristine archives and xbstream archives written by
mariadb-backup --stream=xbstream (or Percona XtraBackup). An xbstream must be
whole: every file needs its end-of-file chunk, and, as a backup, the stream
must hold xtrabackup_checkpoints and xtrabackup_info (mariadb_backup_* on
MariaDB 11), which mariadb-backup writes when the backup has finished, so a
stream cut short fails (exit 1) instead of extracting part of a backup.
--any-xbstream drops the second check, for an xbstream that is not a backup.

--verify auto hashes every payload that is read or copied and trusts extents
cloned from an archive on the same reflink filesystem; all hashes those too;
headers checks only record headers (which lets pipes be spliced).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch verify {
			case "auto":
				opts.Verify = archive.VerifyAuto
			case "all":
				opts.Verify = archive.VerifyAll
			case "headers":
				opts.Verify = archive.VerifyHeaders
			default:
				return fmt.Errorf("%w: --verify must be auto, all or headers", ErrUsage)
			}
			in := g.IO.In
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("unpack: %w", err)
				}
				defer f.Close()
				in = f
			}
			if g.ErrIsTerminal() {
				opts.Progress = g.IO.Err
			}
			return runUnpack(cmd, g, in, args[1], format, opts, !anyXbstream)
		},
	}
	cmd.Flags().StringVar(&format, "format", "auto", "archive format: auto, pristine or xbstream")
	cmd.Flags().StringVar(&verify, "verify", "auto", "payload checks: auto, all or headers")
	cmd.Flags().BoolVar(&anyXbstream, "any-xbstream", false, "accept an xbstream that is not a mariadb-backup backup (no xtrabackup_checkpoints/xtrabackup_info); each file's end chunk is still required")
	cmd.Flags().IntVar(&opts.Threads, "threads", 0, "extents written in parallel (default: number of CPUs)")
	cmd.Flags().BoolVar(&opts.Sync, "sync", false, "flush the new tree to disk (syncfs) before moving it into place")
	cmd.Flags().BoolVar(&opts.NoClone, "no-clone", false, "never clone extents (FICLONERANGE)")
	cmd.Flags().BoolVar(&opts.NoCopyRange, "no-copy-range", false, "never use copy_file_range")
	return cmd
}

// runUnpack detects the format and calls the matching extractor.
// backup requires an xbstream to be a whole mariadb-backup backup.
func runUnpack(cmd *cobra.Command, g *Globals, in io.Reader, dir, format string, opts archive.UnpackOptions, backup bool) error {
	r := in
	if format == "auto" {
		var head [8]byte
		f, isFile := in.(*os.File)
		if fi, err := statOf(f, isFile); err == nil && fi.Mode().IsRegular() {
			n, _ := f.ReadAt(head[:], 0)
			format = detect(head[:n])
		} else {
			if isFile {
				archive.GrowPipe(f)
			}
			n, _ := io.ReadFull(in, head[:])
			format = detect(head[:n])
			r = io.MultiReader(bytes.NewReader(head[:n]), in)
		}
	}
	var st any
	var err error
	var line string
	switch format {
	case "pristine":
		var s archive.Stats
		s, err = archive.Unpack(cmd.Context(), r, dir, opts)
		st = s
		line = fmt.Sprintf("unpacked %d files, %s in %.3fs (cloned %s, copied %s, spliced %s, written %s)", s.Files, units.Bytes(s.DataBytes), s.Elapsed.Seconds(),
			units.Bytes(s.Cloned), units.Bytes(s.Copied), units.Bytes(s.Spliced), units.Bytes(s.Written))
	case "xbstream":
		var s xbstream.Stats
		s, err = xbstream.Extract(cmd.Context(), r, dir, xbstream.Options{Threads: opts.Threads, Sync: opts.Sync, Progress: opts.Progress, Backup: backup})
		if errors.Is(err, xbstream.ErrUnfinished) {
			err = fmt.Errorf("%w (if this xbstream is not a mariadb-backup backup, pass --any-xbstream)", err)
		}
		st = s
		line = fmt.Sprintf("extracted %d files, %s in %.3fs", s.Files, units.Bytes(s.DataBytes), s.Elapsed.Seconds())
	default:
		return fmt.Errorf("%w: unknown archive format %q: use --format pristine or --format xbstream", ErrUsage, format)
	}
	if err != nil {
		return err
	}
	if g.JSON {
		return json.NewEncoder(g.IO.Out).Encode(st)
	}
	fmt.Fprintln(g.IO.Out, line)
	return nil
}

func detect(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("PRSA")):
		return "pristine"
	case bytes.HasPrefix(head, []byte(xbstream.Magic)):
		return "xbstream"
	}
	return "unknown"
}

// statOf is f.Stat() for an input that is a file, an error otherwise.
func statOf(f *os.File, isFile bool) (os.FileInfo, error) {
	if !isFile {
		return nil, os.ErrInvalid
	}
	return f.Stat()
}
