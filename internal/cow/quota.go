package cow

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/mountinfo"
)

// ErrNoQuota is returned (wrapped) by Cap when the filesystem does not
// enforce quotas: btrfs without quotas enabled, XFS mounted without
// prjquota, any other filesystem.
var ErrNoQuota = errors.New("disk quotas are off on this filesystem")

// Capper is a Backend that can cap the space a clone takes beyond what it
// shares with its source: past the cap, writes inside the clone fail with
// EDQUOT ("Disk quota exceeded") while other clones go on.
type Capper interface {
	// Cap limits the clone at path (made by Clone) to bytes of its own.
	Cap(path string, bytes int64) error
}

var (
	_ Capper = (*Btrfs)(nil)
	_ Capper = (*Reflink)(nil)
)

// The btrfs quota ioctls, with their argument layouts from linux/btrfs.h.
const (
	btrfsIocQuotaCtl    = 0xC0109428 // _IOWR(0x94, 40, struct btrfs_ioctl_quota_ctl_args)
	btrfsIocQgroupLimit = 0x8030942B // _IOR(0x94, 43, struct btrfs_ioctl_qgroup_limit_args)

	btrfsQuotaCtlEnableSimple = 4      // BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA (Linux 6.7)
	btrfsQgroupLimitMaxExcl   = 1 << 1 // BTRFS_QGROUP_LIMIT_MAX_EXCL
	btrfsQgroupLimitMaxRfer   = 1 << 0 // BTRFS_QGROUP_LIMIT_MAX_RFER
	_                         = btrfsQgroupLimitMaxRfer
)

type btrfsQgroupLimitArgs struct {
	qgroupid uint64
	flags    uint64
	maxRfer  uint64
	maxExcl  uint64
	rsvRfer  uint64
	rsvExcl  uint64
}

var _ = [1]struct{}{}[unsafe.Sizeof(btrfsQgroupLimitArgs{})-48]

// Cap limits the exclusive bytes of the subvolume at path, that is what it
// wrote after it was snapshotted.
func (b *Btrfs) Cap(path string, bytes int64) error {
	if err := checkInside(b.root, "cap", path); err != nil {
		return err
	}
	if !isSubvol(path) {
		return fmt.Errorf("cap %s: %w: not a btrfs subvolume", path, ErrNoQuota)
	}
	fd, err := openDir(path)
	if err != nil {
		return fmt.Errorf("cap %s: %w", path, err)
	}
	defer unix.Close(fd)
	// qgroupid 0 is the subvolume fd is in.
	args := btrfsQgroupLimitArgs{flags: btrfsQgroupLimitMaxExcl, maxExcl: uint64(bytes)}
	err = ioctlPtr(fd, btrfsIocQgroupLimit, unsafe.Pointer(&args))
	runtime.KeepAlive(&args)
	if errors.Is(err, unix.ENOTCONN) {
		return fmt.Errorf("cap %s: %w: quotas are not enabled (pristine scratch up enables them; or run btrfs quota enable --simple on the mount)", path, ErrNoQuota)
	}
	if err != nil {
		return fmt.Errorf("cap %s: btrfs qgroup limit: %w", path, err)
	}
	return nil
}

// XFS project quota: a project id on every file and directory of the
// clone (inherited by what the server creates there) and a hard block
// limit on the project.
const (
	fsIocFsGetXattr     = 0x801C581F // _IOR('X', 31, struct fsxattr)
	fsIocFsSetXattr     = 0x401C5820 // _IOW('X', 32, struct fsxattr)
	fsXflagProjInherit  = 0x200
	qXSetQLim           = 0x5804 // Q_XSETQLIM
	prjQuota            = 2      // PRJQUOTA
	fsDquotVersion      = 1
	fsProjQuota         = 2 // FS_PROJ_QUOTA
	fsDqBHard           = 1 << 3
	xfsQuotaBlockShift  = 9 // limits are in 512-byte blocks
	projectIDMask       = 0x7fffffff
	projectIDReservedLo = 1 << 20 // ids below are left to the administrator
)

type fsxattr struct {
	xflags     uint32
	extsize    uint32
	nextents   uint32
	projid     uint32
	cowextsize uint32
	pad        [8]byte
}

// fsDiskQuota is struct fs_disk_quota.
type fsDiskQuota struct {
	version      int8
	flags        int8
	fieldmask    uint16
	id           uint32
	blkHardlimit uint64
	blkSoftlimit uint64
	inoHardlimit uint64
	inoSoftlimit uint64
	bcount       uint64
	icount       uint64
	itimer       int32
	btimer       int32
	iwarns       uint16
	bwarns       uint16
	itimerHi     int8
	btimerHi     int8
	rtbtimerHi   int8
	padding2     int8
	rtbHardlimit uint64
	rtbSoftlimit uint64
	rtbcount     uint64
	rtbtimer     int32
	rtbwarns     uint16
	padding3     int16
	padding4     [8]byte
}

var _ = [1]struct{}{}[unsafe.Sizeof(fsxattr{})-28]
var _ = [1]struct{}{}[unsafe.Sizeof(fsDiskQuota{})-112]

// ProjectID is the XFS project id pristine gives the clone at path: derived
// from the path, so a slot keeps its id across resets, and above the ids
// an administrator would pick by hand.
func ProjectID(path string) uint32 {
	return projectIDReservedLo + crc32.ChecksumIEEE([]byte(filepath.Clean(path)))%(projectIDMask-projectIDReservedLo)
}

// Cap puts the clone at path in its own XFS project and limits the
// project's blocks. XFS charges a reflinked block to every file that shares
// it, so the limit is what the clone holds now plus bytes.
func (b *Reflink) Cap(path string, bytes int64) error {
	if err := checkInside(b.root, "cap", path); err != nil {
		return err
	}
	dev, err := prjquotaDevice(path)
	if err != nil {
		return fmt.Errorf("cap %s: %w", path, err)
	}
	id := ProjectID(path)
	var held int64
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || !(d.Type().IsRegular() || d.IsDir()) {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		held += st.Blocks << 9
		return setProject(p, id, d.IsDir())
	})
	if err != nil {
		return fmt.Errorf("cap %s: set XFS project %d: %w", path, id, err)
	}
	q := fsDiskQuota{version: fsDquotVersion, flags: fsProjQuota, fieldmask: fsDqBHard, id: id,
		blkHardlimit: uint64(held+bytes) >> xfsQuotaBlockShift}
	special, err := unix.BytePtrFromString(dev)
	if err != nil {
		return fmt.Errorf("cap %s: %w", path, err)
	}
	_, _, errno := unix.Syscall6(unix.SYS_QUOTACTL, uintptr(qXSetQLim<<8|prjQuota), uintptr(unsafe.Pointer(special)),
		uintptr(id), uintptr(unsafe.Pointer(&q)), 0, 0)
	runtime.KeepAlive(&q)
	if errno != 0 {
		return fmt.Errorf("cap %s: set the XFS project quota of %d on %s: %w", path, id, dev, errno)
	}
	return nil
}

// setProject gives a file or directory the project id; directories pass
// it on to what is created in them.
func setProject(path string, id uint32, dir bool) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var x fsxattr
	if err := ioctlPtr(fd, fsIocFsGetXattr, unsafe.Pointer(&x)); err != nil {
		return err
	}
	x.projid = id
	if dir {
		x.xflags |= fsXflagProjInherit
	}
	err = ioctlPtr(fd, fsIocFsSetXattr, unsafe.Pointer(&x))
	runtime.KeepAlive(&x)
	return err
}

// prjquotaDevice returns the block device of the XFS filesystem holding
// path, when that filesystem enforces project quotas.
func prjquotaDevice(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", err
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	mounts, err := mountinfo.Read()
	if err != nil {
		return "", err
	}
	for _, m := range mounts {
		if m.Dev != dev {
			continue
		}
		if m.FSType != "xfs" {
			return "", fmt.Errorf("%w: %s is %s, and only XFS project quotas cap reflink clones", ErrNoQuota, m.Point, m.FSType)
		}
		for _, o := range strings.Split(m.Options, ",") {
			if o == "prjquota" || o == "pquota" {
				return m.Source, nil
			}
		}
		return "", fmt.Errorf("%w: XFS at %s is mounted without prjquota (pristine scratch up --fs xfs mounts with it)", ErrNoQuota, m.Point)
	}
	return "", fmt.Errorf("%w: no mount found for %s", ErrNoQuota, path)
}
