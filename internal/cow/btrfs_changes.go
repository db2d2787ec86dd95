package cow

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Finding what changed in a btrfs subvolume since a transaction, the way
// `btrfs subvolume find-new` does: every item of the subvolume's tree
// carries the transaction that last wrote it.
const (
	btrfsIocTreeSearch = 0xD0009411 // _IOWR(0x94, 17, struct btrfs_ioctl_search_args)
	btrfsIocInoLookup  = 0xD0009412 // _IOWR(0x94, 18, struct btrfs_ioctl_ino_lookup_args)

	btrfsRootTreeObjectID = 1
	btrfsInodeItemKey     = 1
	btrfsRootItemKey      = 132
	btrfsExtentDataKey    = 108
	btrfsInodeItemSize    = 160 // struct btrfs_inode_item
	btrfsSearchHeaderSize = 32  // struct btrfs_ioctl_search_header
)

// btrfsSearchArgs is struct btrfs_ioctl_search_args: a key, then results.
type btrfsSearchArgs struct {
	treeID                   uint64
	minObjectID, maxObjectID uint64
	minOffset, maxOffset     uint64
	minTransID, maxTransID   uint64
	minType, maxType         uint32
	nrItems                  uint32
	unused                   uint32
	unused1                  [4]uint64
	buf                      [4096 - 104]byte
}

// btrfsInoLookupArgs is struct btrfs_ioctl_ino_lookup_args.
type btrfsInoLookupArgs struct {
	treeID   uint64
	objectID uint64
	name     [4080]byte
}

var _ = [1]struct{}{}[unsafe.Sizeof(btrfsSearchArgs{})-4096]
var _ = [1]struct{}{}[unsafe.Sizeof(btrfsInoLookupArgs{})-4096]

// searchItem is one item a tree search found.
type searchItem struct {
	transid, objectid, offset uint64
	typ                       uint32
	data                      []byte
}

// treeSearch returns every item of tree (0: the subvolume of fd) in the key
// range, from leaves written in minTrans or later.
func treeSearch(fd int, tree, minObj, maxObj uint64, minType, maxType uint32, minTrans uint64, each func(searchItem)) error {
	args := &btrfsSearchArgs{treeID: tree, minObjectID: minObj, maxObjectID: maxObj,
		maxOffset: math.MaxUint64, minTransID: minTrans, maxTransID: math.MaxUint64,
		minType: minType, maxType: maxType}
	for {
		args.nrItems = 4096
		err := ioctlPtr(fd, btrfsIocTreeSearch, unsafe.Pointer(args))
		runtime.KeepAlive(args)
		if err != nil {
			return err
		}
		if args.nrItems == 0 {
			return nil
		}
		var last searchItem
		off := 0
		for i := uint32(0); i < args.nrItems; i++ {
			h := args.buf[off : off+btrfsSearchHeaderSize]
			it := searchItem{transid: binary.LittleEndian.Uint64(h[0:]), objectid: binary.LittleEndian.Uint64(h[8:]),
				offset: binary.LittleEndian.Uint64(h[16:]), typ: binary.LittleEndian.Uint32(h[24:])}
			n := int(binary.LittleEndian.Uint32(h[28:]))
			off += btrfsSearchHeaderSize
			it.data = args.buf[off : off+n]
			off += n
			each(it)
			last = it
		}
		// Go on after the last item found.
		args.minObjectID, args.minType, args.minOffset = last.objectid, last.typ, last.offset
		switch {
		case last.offset < math.MaxUint64:
			args.minOffset++
		case last.typ < 255:
			args.minType, args.minOffset = last.typ+1, 0
		case last.objectid < math.MaxUint64:
			args.minObjectID, args.minType, args.minOffset = last.objectid+1, 0, 0
		default:
			return nil
		}
		if args.minObjectID > maxObj {
			return nil
		}
	}
}

// BtrfsGeneration returns the transaction from which BtrfsChanged finds the
// changes in the subvolume at path: one past the last transaction that
// committed it (what `btrfs subvolume find-new` calls the transid marker).
// A change made after this call has this generation or a later one.
func BtrfsGeneration(path string) (uint64, error) {
	fd, err := openDir(path)
	if err != nil {
		return 0, fmt.Errorf("btrfs generation of %s: %w", path, err)
	}
	defer unix.Close(fd)
	look := &btrfsInoLookupArgs{objectID: btrfsFirstFreeInode}
	err = ioctlPtr(fd, btrfsIocInoLookup, unsafe.Pointer(look))
	runtime.KeepAlive(look)
	if err != nil {
		return 0, fmt.Errorf("btrfs generation of %s: look up the subvolume: %w", path, err)
	}
	var gen uint64
	err = treeSearch(fd, btrfsRootTreeObjectID, look.treeID, look.treeID, btrfsRootItemKey, btrfsRootItemKey, 0, func(it searchItem) {
		if it.typ != btrfsRootItemKey || len(it.data) < btrfsInodeItemSize+8 {
			return
		}
		gen = max(gen, it.transid, binary.LittleEndian.Uint64(it.data[btrfsInodeItemSize:]))
	})
	if err != nil {
		return 0, fmt.Errorf("btrfs generation of %s: search the root tree: %w", path, err)
	}
	if gen == 0 {
		return 0, fmt.Errorf("btrfs generation of %s: no root item for subvolume %d", path, look.treeID)
	}
	return gen + 1, nil
}

// BtrfsChanged returns the inode numbers in the subvolume at path whose
// inode (size, times, links, entries of a directory) or data changed in
// transaction gen or later: inode items whose transid, and file extents
// whose generation, is gen or more. A file created since is among them; a
// file removed since shows as a change of its directory.
func BtrfsChanged(path string, gen uint64) ([]uint64, error) {
	fd, err := openDir(path)
	if err != nil {
		return nil, fmt.Errorf("btrfs changes in %s: %w", path, err)
	}
	defer unix.Close(fd)
	seen := map[uint64]bool{}
	var out []uint64
	err = treeSearch(fd, 0, btrfsFirstFreeInode, math.MaxUint64, 0, 255, gen, func(it searchItem) {
		var when uint64
		switch {
		case it.typ == btrfsInodeItemKey && len(it.data) >= 16:
			when = binary.LittleEndian.Uint64(it.data[8:]) // transid
		case it.typ == btrfsExtentDataKey && len(it.data) >= 8:
			when = binary.LittleEndian.Uint64(it.data[0:]) // generation
		default:
			return
		}
		if when >= gen && !seen[it.objectid] {
			seen[it.objectid] = true
			out = append(out, it.objectid)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("btrfs changes in %s: tree search: %w", path, err)
	}
	return out, nil
}
