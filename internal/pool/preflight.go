package pool

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/sysmem"
)

// ErrNoRoom is returned (wrapped) when a pool would not fit in memory or disk.
var ErrNoRoom = errors.New("pool does not fit")

// Estimates of what one slot costs beyond its server's memory
// (mariadb.Flavor.SlotMemory and its buffer pool).
const (
	slotDiskWrite = 16 << 20 // private blocks a fresh slot writes under reflink/btrfs
	memReserve    = 1 << 30  // left for the system and pristine itself
)

// Preflight projects the memory and disk a pool of opt.Size slots needs and
// refuses, naming the largest size that fits, when that is more than the
// machine has.
func Preflight(cat *catalog.Catalog, backend cow.Backend, m *catalog.Meta, opt Options) error {
	perMem, perDisk := SlotCost(backend, m, opt.Profile)
	avail, err := sysmem.Available()
	if err == nil {
		avail -= memReserve
		if need := perMem * int64(opt.Size); need > avail {
			return fmt.Errorf("%w: %d slots need about %s of memory (%s each) but %s is available: use --size %d or less, or a smaller --buffer-pool",
				ErrNoRoom, opt.Size, mib(need), mib(perMem), mib(max(avail, 0)), max(avail/perMem, 0))
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(cat.Root().Data(), &st); err == nil {
		free := int64(st.Bavail) * st.Bsize
		if need := perDisk * int64(opt.Size); need > free {
			return fmt.Errorf("%w: %d slots need about %s of disk in %s (%s each on the %s backend) but %s is free: use --size %d or less, or a larger scratch filesystem (pristine scratch up --size)",
				ErrNoRoom, opt.Size, mib(need), cat.Root().Data(), mib(perDisk), backend.Name(), mib(free), free/perDisk)
		}
	}
	return nil
}

// SlotCost projects the memory and disk one slot of template m takes.
func SlotCost(backend cow.Backend, m *catalog.Meta, p mariadb.Profile) (mem, disk int64) {
	mem = mariadb.Flavor(m.Flavor).SlotMemory() + p.BufferPool
	disk = slotDiskWrite
	if backend.Name() == "copy" {
		disk += m.Bytes
	}
	return mem, disk
}

// Cost is the projected memory and disk of the pool's live slots.
func (p *Pool) Cost() (mem, disk int64) {
	m, d := SlotCost(p.backend, p.Meta, p.opt.Profile)
	n := int64(p.Live())
	return m * n, d * n
}

func mib(n int64) string { return strconv.FormatInt(n>>20, 10) + " MiB" }

// SlotCost projects the memory and disk one more slot of the pool takes.
func (p *Pool) SlotCost() (mem, disk int64) { return SlotCost(p.backend, p.Meta, p.opt.Profile) }

// CheckGrow is Preflight for n more slots: it refuses, naming what is
// available, when the machine has not the memory or disk for them.
func (p *Pool) CheckGrow(n int) error {
	opt := p.opt
	opt.Size = n
	return Preflight(p.cat, p.backend, p.Meta, opt)
}
