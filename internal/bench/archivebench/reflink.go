package archivebench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/quote"
)

// reflink measures unpack from an archive file on a loop-mounted XFS
// (reflink=1) into the same filesystem. The image lives in the bench's
// /dev/shm directory; the mount is removed before returning.
func (b *bench) reflink(ctx context.Context, prsa string) ([]Row, string, error) {
	if os.Geteuid() != 0 {
		return nil, "", fmt.Errorf("reflink step skipped: loop-mounting XFS needs root")
	}
	if _, err := exec.LookPath("mkfs.xfs"); err != nil {
		return nil, "", fmt.Errorf("reflink step skipped: mkfs.xfs is not installed")
	}
	fi, err := os.Stat(prsa)
	if err != nil {
		return nil, "", err
	}
	img := filepath.Join(b.work, "xfs.img")
	mnt := filepath.Join(b.work, "xfs")
	size := fi.Size()*5/2 + 512<<20
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, "", err
	}
	if _, err := b.shell(ctx, fmt.Sprintf("truncate -s %d %s && mkfs.xfs -q -m reflink=1 %s && mount -o loop %s %s", size, quote.Shell(img), quote.Shell(img), quote.Shell(img), quote.Shell(mnt))); err != nil {
		return nil, "", err
	}
	defer func() {
		exec.Command("umount", mnt).Run()
		os.Remove(img)
	}()
	arch := filepath.Join(mnt, "data.prsa")
	if _, err := b.shell(ctx, fmt.Sprintf("cp --reflink=never %s %s && sync", quote.Shell(prsa), quote.Shell(arch))); err != nil {
		return nil, "", err
	}
	out := filepath.Join(mnt, "out")
	var rows []Row
	for _, s := range []struct{ name, flags string }{
		{"pristine unpack, archive on same XFS reflink fs (clone)", ""},
		{"same, --verify all (hash cloned extents too)", "--verify all"},
	} {
		b.logf("measuring: %s", s.name)
		r, err := b.measure(ctx, s.name, fmt.Sprintf("%s unpack %s %s %s", quote.Shell(b.opts.Exe), s.flags, quote.Shell(arch), quote.Shell(out)), out)
		if err != nil {
			return nil, "", err
		}
		rows = append(rows, r)
	}
	return rows, "XFS (reflink=1) loop-mounted from an image on /dev/shm; removed afterwards", nil
}
