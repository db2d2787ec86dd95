package diskuse

import (
	"encoding/binary"
	"math"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// searchKey is struct btrfs_ioctl_search_key (linux/btrfs.h).
type searchKey struct {
	treeID, minObjectID, maxObjectID, minOffset, maxOffset, minTransID, maxTransID uint64
	minType, maxType, nrItems, _                                                   uint32
	_                                                                              [4]uint64
}

// searchBufSize is the buffer one tree search fills: about 770 extents.
const searchBufSize = 64 << 10

// searchArgsV2 is struct btrfs_ioctl_search_args_v2 with its buffer.
type searchArgsV2 struct {
	key     searchKey
	bufSize uint64
	buf     [searchBufSize]byte
}

const (
	// btrfsIocTreeSearchV2 is _IOWR(0x94, 17, struct btrfs_ioctl_search_args_v2)
	// (112 bytes without the buffer).
	btrfsIocTreeSearchV2 = 0xC0709411
	extentDataKey        = 108 // BTRFS_EXTENT_DATA_KEY
	searchHeaderSize     = 32  // struct btrfs_ioctl_search_header
	// struct btrfs_file_extent_item: ram_bytes at 8, compression at 16,
	// type at 20; then, for a regular or preallocated extent,
	// disk_bytenr at 21, disk_num_bytes at 29, offset at 37, num_bytes
	// at 45. An inline extent's data starts at 21.
	fileExtentInline = 0
	itemHeaderSize   = 21
	itemSize         = 53
)

var _ = [1]struct{}{}[unsafe.Sizeof(searchKey{})-104]
var _ = [1]struct{}{}[unsafe.Offsetof(searchArgsV2{}.buf)-112]

// btrfsExtents counts the file extent items of inode ino in the subvolume
// fd is in (tree 0: the fd's own), searching from offset 0 up.
func (c *Counter) btrfsExtents(fd int, ino uint64) error {
	args := new(searchArgsV2)
	next := uint64(0)
	for {
		args.key = searchKey{minObjectID: ino, maxObjectID: ino, minOffset: next, maxOffset: math.MaxUint64,
			maxTransID: math.MaxUint64, minType: extentDataKey, maxType: extentDataKey, nrItems: math.MaxUint32}
		args.bufSize = searchBufSize
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), btrfsIocTreeSearchV2, uintptr(unsafe.Pointer(args)))
		runtime.KeepAlive(args)
		if errno != 0 {
			return errno
		}
		n := args.key.nrItems
		if n == 0 {
			return nil
		}
		buf, last := args.buf[:], uint64(0)
		for range n {
			if len(buf) < searchHeaderSize {
				break
			}
			objectID := binary.LittleEndian.Uint64(buf[8:])
			offset := binary.LittleEndian.Uint64(buf[16:])
			typ := binary.LittleEndian.Uint32(buf[24:])
			l := int(binary.LittleEndian.Uint32(buf[28:]))
			if len(buf) < searchHeaderSize+l {
				break
			}
			item := buf[searchHeaderSize : searchHeaderSize+l]
			buf = buf[searchHeaderSize+l:]
			last = offset
			if objectID != ino || typ != extentDataKey || len(item) < itemHeaderSize {
				continue
			}
			c.fileExtent(item)
		}
		if last == math.MaxUint64 {
			return nil
		}
		next = last + 1
	}
}

// fileExtent counts one struct btrfs_file_extent_item.
func (c *Counter) fileExtent(item []byte) {
	if item[20] == fileExtentInline {
		// The data sits in the metadata item itself, compressed or not.
		c.extent(0, int64(binary.LittleEndian.Uint64(item[8:])), int64(len(item)-itemHeaderSize))
		return
	}
	if len(item) < itemSize {
		return
	}
	diskBytenr := binary.LittleEndian.Uint64(item[21:])
	if diskBytenr == 0 {
		return // a hole
	}
	diskNum := int64(binary.LittleEndian.Uint64(item[29:]))
	num := int64(binary.LittleEndian.Uint64(item[45:]))
	c.extent(diskBytenr, num, diskNum)
}
