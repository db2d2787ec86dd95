package scratch

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// btrfsQuotaCtlArgs is struct btrfs_ioctl_quota_ctl_args (linux/btrfs.h).
type btrfsQuotaCtlArgs struct {
	cmd    uint64
	status uint64
}

const (
	btrfsIocQuotaCtl          = 0xC0109428 // _IOWR(0x94, 40, struct btrfs_ioctl_quota_ctl_args)
	btrfsQuotaCtlEnableSimple = 4          // BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA (Linux 6.7)
)

var _ = [1]struct{}{}[unsafe.Sizeof(btrfsQuotaCtlArgs{})-16]

// enableBtrfsQuota turns on simple quotas (squota, Linux 6.7 and later) on
// the btrfs filesystem mounted at mnt. Under simple quotas an extent counts
// against the subvolume that wrote it, so a slot's snapshot starts at zero
// and is charged only for what it writes, without the cost classic qgroups
// put on every snapshot and deletion.
func enableBtrfsQuota(mnt string) error {
	fd, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("enable btrfs quotas on %s: %w", mnt, err)
	}
	defer unix.Close(fd)
	args := btrfsQuotaCtlArgs{cmd: btrfsQuotaCtlEnableSimple}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), btrfsIocQuotaCtl, uintptr(unsafe.Pointer(&args)))
	runtime.KeepAlive(&args)
	if errno != 0 && !errors.Is(errno, unix.EEXIST) {
		return fmt.Errorf("enable btrfs simple quotas on %s: %w (needs Linux 6.7 or later)", mnt, errno)
	}
	return nil
}
