package archivebench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/stats"
	"golang.org/x/sys/unix"
)

// disk measures extraction onto real disks, each step until the data is
// durable (syncfs): a directory on the ext4 filesystem of opts.DiskDir,
// and an XFS filesystem loop-mounted from an image file in opts.DiskDir.
// Speed ratios are against `mbstream -x` + sync on the same filesystem.
func (b *bench) disk(ctx context.Context, xbs, prsa string, dataBytes int64) ([]Row, []string) {
	base := b.opts.DiskDir
	if base == "" {
		base = "/var/tmp"
	}
	var rows []Row
	var notes []string
	work, err := os.MkdirTemp(base, "pristine-bench-disk-")
	if err != nil {
		return nil, []string{fmt.Sprintf("disk steps skipped: %v", err)}
	}
	defer os.RemoveAll(work)
	var st unix.Statfs_t
	if err := unix.Statfs(work, &st); err == nil && st.Type == unix.EXT4_SUPER_MAGIC {
		r, err := b.diskSteps(ctx, "ext4", work, xbs, prsa, dataBytes)
		if err != nil {
			notes = append(notes, fmt.Sprintf("ext4 steps failed: %v", err))
		}
		rows = append(rows, r...)
	} else {
		notes = append(notes, fmt.Sprintf("ext4 steps skipped: %s is not on ext4", base))
	}
	if os.Geteuid() != 0 {
		return rows, append(notes, "XFS disk steps skipped: loop-mounting needs root")
	}
	if _, err := exec.LookPath("mkfs.xfs"); err != nil {
		return rows, append(notes, "XFS disk steps skipped: mkfs.xfs is not installed")
	}
	fi, err := os.Stat(prsa)
	if err != nil {
		return rows, append(notes, err.Error())
	}
	img, mnt := filepath.Join(work, "xfs.img"), filepath.Join(work, "xfs")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return rows, append(notes, err.Error())
	}
	if _, err := b.shell(ctx, fmt.Sprintf("truncate -s %d %s && mkfs.xfs -q -m reflink=1 %s && mount -o loop %s %s", fi.Size()*3+512<<20, quote.Shell(img), quote.Shell(img), quote.Shell(img), quote.Shell(mnt))); err != nil {
		return rows, append(notes, fmt.Sprintf("XFS disk steps skipped: %v", err))
	}
	defer exec.Command("umount", mnt).Run()
	r, err := b.diskSteps(ctx, "XFS loop on a disk image", mnt, xbs, prsa, dataBytes)
	if err != nil {
		notes = append(notes, fmt.Sprintf("XFS disk steps failed: %v", err))
	}
	return append(rows, r...), notes
}

func (b *bench) diskSteps(ctx context.Context, label, dir, xbs, prsa string, dataBytes int64) ([]Row, error) {
	out := filepath.Join(dir, "out")
	exe := quote.Shell(b.opts.Exe)
	steps := []struct{ name, cmd string }{
		{"mbstream -x + sync -f", fmt.Sprintf("mkdir %s && mbstream -x -C %s < %s && sync -f %s", quote.Shell(out), quote.Shell(out), quote.Shell(xbs), quote.Shell(out))},
		{"pristine unpack --format xbstream --sync", fmt.Sprintf("%s unpack --format xbstream --sync %s %s", exe, quote.Shell(xbs), quote.Shell(out))},
		{"pristine unpack --sync (archive file)", fmt.Sprintf("%s unpack --sync %s %s", exe, quote.Shell(prsa), quote.Shell(out))},
		// The floor: the same bytes written as one file, then synced.
		{"cat XBSTREAM > one file + sync -f (the write alone)", fmt.Sprintf("mkdir %s && cat %s > %s/x && sync -f %s", quote.Shell(out), quote.Shell(xbs), quote.Shell(out), quote.Shell(out))},
	}
	// Round robin, so that the disk's moods (host caches, the writeback
	// of the previous run's removal) fall on every step alike; before each
	// run the previous output is removed and the filesystem synced.
	walls := make([][]float64, len(steps))
	cpus := make([][]float64, len(steps))
	for run := 0; run <= b.opts.Runs; run++ {
		for i, s := range steps {
			os.RemoveAll(out)
			if err := syncDir(dir); err != nil {
				return nil, err
			}
			w, c, err := b.timed(ctx, s.cmd)
			if err != nil {
				return nil, fmt.Errorf("bench %s on %s: %w", s.name, label, err)
			}
			if run > 0 {
				walls[i], cpus[i] = append(walls[i], w), append(cpus[i], c)
			}
		}
	}
	os.RemoveAll(out)
	var rows []Row
	for i, s := range steps {
		rows = append(rows, Row{Name: fmt.Sprintf("%s, on %s", s.name, label), Wall: stats.Median(walls[i]), CPU: stats.Median(cpus[i])})
	}
	for i := range rows {
		rows[i].GBps = float64(dataBytes) / 1e9 / rows[i].Wall
		rows[i].VsMbWal = rows[0].Wall / rows[i].Wall
		if rows[0].CPU > 0 {
			rows[i].VsMbCPU = rows[i].CPU / rows[0].CPU
		}
	}
	return rows, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
