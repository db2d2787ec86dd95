package cow

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The btrfs ioctls pristine uses, with their argument layouts as declared in
// the kernel's uapi header linux/btrfs.h.
const (
	btrfsPathNameMax    = 4087
	btrfsSubvolNameMax  = 4039
	btrfsFirstFreeInode = 256 // the inode number of every subvolume's top directory

	// _IOW(0x94, nr, 4096-byte struct)
	btrfsIocSubvolCreate = 0x50009400 | 14
	btrfsIocSnapDestroy  = 0x50009400 | 15
	btrfsIocSnapCreateV2 = 0x50009400 | 23
)

// btrfsVolArgs is struct btrfs_ioctl_vol_args.
type btrfsVolArgs struct {
	fd   int64
	name [btrfsPathNameMax + 1]byte
}

// btrfsVolArgsV2 is struct btrfs_ioctl_vol_args_v2.
type btrfsVolArgsV2 struct {
	fd      int64
	transid uint64
	flags   uint64
	unused  [4]uint64
	name    [btrfsSubvolNameMax + 1]byte
}

// Both structs are 4096 bytes, the size encoded in the ioctl numbers.
var _ = [1]struct{}{}[unsafe.Sizeof(btrfsVolArgs{})-4096]
var _ = [1]struct{}{}[unsafe.Sizeof(btrfsVolArgsV2{})-4096]

func ioctlPtr(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// openDir opens a directory for an ioctl.
func openDir(path string) (int, error) {
	return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// subvolCreate creates the empty subvolume name in the directory parent.
func subvolCreate(parent, name string) error {
	return volIoctl(parent, name, btrfsIocSubvolCreate)
}

// volIoctl runs an ioctl that takes a subvolume name in the directory
// parent (create, destroy).
func volIoctl(parent, name string, req uintptr) error {
	var args btrfsVolArgs
	if len(name) > btrfsPathNameMax {
		return fmt.Errorf("subvolume name too long")
	}
	copy(args.name[:], name)
	fd, err := openDir(parent)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	err = ioctlPtr(fd, req, unsafe.Pointer(&args))
	runtime.KeepAlive(&args)
	return err
}

// snapCreate snapshots the subvolume src as name in the directory parent.
func snapCreate(src, parent, name string) error {
	var args btrfsVolArgsV2
	if len(name) > btrfsSubvolNameMax {
		return fmt.Errorf("subvolume name too long")
	}
	copy(args.name[:], name)
	sfd, err := openDir(src)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	pfd, err := openDir(parent)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	args.fd = int64(sfd)
	err = ioctlPtr(pfd, btrfsIocSnapCreateV2, unsafe.Pointer(&args))
	runtime.KeepAlive(&args)
	return err
}

// snapDestroy deletes the subvolume name in the directory parent, with all
// it holds.
func snapDestroy(parent, name string) error {
	return volIoctl(parent, name, btrfsIocSnapDestroy)
}
