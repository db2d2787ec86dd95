package server

import (
	"fmt"
	"sort"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/sysmem"
	"golang.org/x/sys/unix"
)

// Budget caps what every pool of the daemon may take together; zero means
// only the machine's limits (pool.Preflight) apply.
type Budget struct {
	Memory int64
	Disk   int64
}

// DefaultBudget is the budget of a daemon whose operator named none
// (`serve` without --max-memory/--max-disk): three quarters of the
// machine's memory (MemTotal) and three quarters of the size of the
// filesystem that holds dataDir (the root's data: templates and clones).
// What cannot be read stays 0 (no cap beyond the machine's).
func DefaultBudget(dataDir string) Budget {
	var b Budget
	if total, err := sysmem.Total(); err == nil {
		b.Memory = total / 4 * 3
	}
	var st unix.Statfs_t
	if unix.Statfs(dataDir, &st) == nil {
		b.Disk = int64(st.Blocks) * st.Bsize / 4 * 3
	}
	return b
}

// makeRoom checks a pool of size slots of m (a new one, or one growing to
// size) against the budget and, when it does not fit, retires ready slots
// of the other pools, least recently used first. It fails, saying how
// many slots would fit and how to raise the budget, when even that is not
// enough.
func (s *Server) makeRoom(m *catalog.Meta, prof mariadb.Profile, size int) error {
	if s.Budget.Memory <= 0 && s.Budget.Disk <= 0 {
		return nil
	}
	b, err := s.cat.BackendFor(m)
	if err != nil {
		return err
	}
	mem1, disk1 := pool.SlotCost(b, m, prof)
	return s.roomFor(m.Name, mem1, disk1, size)
}

// roomFor is makeRoom for size slots of the pool name, each costing mem1
// of memory and disk1 of disk.
func (s *Server) roomFor(name string, mem1, disk1 int64, size int) error {
	if s.Budget.Memory <= 0 && s.Budget.Disk <= 0 {
		return nil
	}
	needMem, needDisk := mem1*int64(size), disk1*int64(size)
	var others []*pool.Pool
	for _, n := range s.poolNames() {
		if p, err := s.pool(n); err == nil && n != name {
			others = append(others, p)
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].LastUsed().Before(others[j].LastUsed()) })
	over := func() (int64, int64) {
		var mem, disk int64
		for _, p := range others {
			pm, pd := p.Cost()
			mem, disk = mem+pm, disk+pd
		}
		return overBy(mem+needMem, s.Budget.Memory), overBy(disk+needDisk, s.Budget.Disk)
	}
	// Refuse before touching anything when even retiring every ready slot
	// of the other pools would not be enough.
	om, od := over()
	for _, p := range others {
		pm, pd := p.Cost()
		if live := int64(p.Live()); live > 0 {
			ready := int64(p.Status(false).States[pool.Ready])
			om, od = om-pm/live*ready, od-pd/live*ready
		}
	}
	if om > 0 || od > 0 {
		// How many slots of this pool would fit, with every idle slot of
		// the others retired.
		fit := int64(size)
		if om > 0 && mem1 > 0 {
			fit = min(fit, int64(size)-ceilDiv(om, mem1))
		}
		if od > 0 && disk1 > 0 {
			fit = min(fit, int64(size)-ceilDiv(od, disk1))
		}
		return fmt.Errorf("%w: %d slots of %s need %d MiB of memory and %d MiB of disk (%d MiB and %d MiB each); the daemon's budget (--max-memory %d MiB, --max-disk %d MiB) would still be short by %d MiB of memory and %d MiB of disk after shrinking every idle pool, so at most %d slots fit: ask for fewer slots (fewer parallel processes), release leases, or restart `pristine serve` with a larger --max-memory/--max-disk",
			pool.ErrNoRoom, size, name, needMem>>20, needDisk>>20, mem1>>20, disk1>>20, s.Budget.Memory>>20, s.Budget.Disk>>20, max(om, 0)>>20, max(od, 0)>>20, max(fit, 0))
	}
	for _, p := range others {
		om, od := over()
		if om <= 0 && od <= 0 {
			return nil
		}
		pm, pd := p.Cost()
		live := int64(p.Live())
		if live == 0 {
			continue
		}
		per := max(ceilDiv(om, pm/live), ceilDiv(od, pd/live))
		if n := p.Shrink(int(per)); n > 0 {
			s.log.Info("shrank an idle pool to make room", "template", p.Meta.Name, "slots", n, "for", name)
		}
	}
	if om, od := over(); om > 0 || od > 0 {
		return fmt.Errorf("%w: %d slots of %s do not fit the daemon's budget: slots became busy while shrinking idle pools; try again", pool.ErrNoRoom, size, name)
	}
	return nil
}

func overBy(used, budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	return used - budget
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
