package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// Options shapes a pool.
type Options struct {
	Size    int             // number of slots (servers)
	Profile mariadb.Profile // server profile of every slot
	// Parallel is how many slots are cloned and started at once; default
	// 4 per core (measured on 2 cores, 200 slots: 2 at once 11.7 s, 4 at
	// once 6.5 s, 8 at once 5.3-5.7 s, 16 at once 5.6-7.6 s).
	Parallel int
	// Size is also the pool's base: the slots Grow adds beyond it go
	// again once idle (ShrinkIdle).
	// ResetWorkers is how many slots are reset at once in the background;
	// default one per core: with 200 slots released at once on 2 cores, 4
	// workers made each reset twice as slow (p99 534-602 ms against
	// 261-271 ms) and every slot was ready again no sooner
	// (docs/benchmarks.md, "Where a slot's start goes").
	ResetWorkers int
	// Progress, when set, is told how many slots are ready while the pool
	// starts, until every slot answered (after Up returned too, when
	// MinReady is less than the pool's slots); it is called by one
	// goroutine at a time.
	Progress func(ready, total int)
	// MinReady is how many slots Up (Start) waits for: it returns once
	// that many answered, and the others start in the background, each
	// handed to waiting lease requests as soon as it answers. 0, or more
	// than the pool's slots: every slot.
	MinReady int
	// Journal, when set, records every lease so a restarted daemon knows it.
	Journal Journal
	// Observe, when set, is told every lease wait and reset duration
	// (kind "lease_wait" or "reset"), for metrics.
	Observe func(template, kind string, d time.Duration)
	// Restore are the leases a previous daemon handed out from this pool:
	// their slots start again on their existing clones (crash recovery),
	// on the same port when it is free, and the leases stay valid. A lease
	// whose clone was replaced meanwhile, or whose slot does not start on
	// it, is lost (journaled as such, never restored again).
	Restore []Lease
	// Log receives slot deaths, lost leases and failed resets; nil
	// discards them.
	Log *slog.Logger
	// Event, when set, is told every slot death and lost lease, for
	// metrics.
	Event func(Event)
	// SlotDisk caps the disk each slot may write beyond what it shares
	// with the template (btrfs: a qgroup limit on the slot's subvolume;
	// reflink on XFS: a project quota). At the cap the slot's writes fail
	// with "Disk quota exceeded"; other slots go on. 0: no cap. Plain
	// copies and filesystems without quotas are not capped (Status says
	// why).
	SlotDisk int64
	// Slots, when more than Size, is how many slots Up makes (a pool that
	// had grown, restored after a daemon restart); the ones beyond Size
	// are grown slots, retired once idle (ShrinkIdle).
	Slots int
	// SlotMemory caps the memory one MEMORY table, one temporary table
	// and one session of a slot may take (ceilings a lease cannot raise)
	// and, where pristine is root and a memory cgroup hierarchy is
	// usable, each slot server's memory in all (memLimit; memcg.go,
	// slotgroups.go).
	// 0: the server's defaults, which a lease can raise without bound.
	SlotMemory int64
	// Network, when set, makes the slots reachable from other machines
	// (network.go); nil: loopback only.
	Network *Network
	// Spares, when more than 0, lets the pool grow by itself while lease
	// requests wait behind resets: one slot at a time, up to Spares slots
	// beyond its size (or the size a client last grew it to); the idle
	// shrink retires them again (spares.go). 0: off.
	Spares int
	// GrowForWait, when set, grows the pool by a spare (the daemon's
	// budget checks, then GrowForWait); nil: CheckGrow, then
	// GrowForWait.
	GrowForWait func(p *Pool, want int) error
}

// Errors callers map to messages, exit codes and HTTP statuses.
var (
	ErrClosed       = errors.New("pool is shutting down")
	ErrUnknownLease = errors.New("unknown lease")
	ErrLeaseTimeout = errors.New("no slot became free in time")
)

// Pool is a set of slots of one template.
type Pool struct {
	Meta    *catalog.Meta
	cat     *catalog.Catalog
	bin     *mariadb.Binary
	backend cow.Backend
	opt     Options
	dir     string      // clones live in dir/NNN/data
	disk    diskCache   // the last DiskUse (diskuse.go)
	run     string      // sockets and logs live in run/NNN
	globals poolGlobals // a fresh slot's global variables' hash
	kinds   tableKinds  // how the in-place reset restores each table
	rows    rowCache    // the template's rows the in-place reset writes back
	options optionDirs  // ended leases' option directories, for the next leases
	// chowns is what a snapshot of the template gives to a slot's id
	// (templateOwner), listed once.
	chowns     *cow.Chowns
	chownsOnce sync.Once

	mu     sync.Mutex
	wake   chan struct{} // closed and replaced whenever a unit may have become free
	slots  []*slot
	leases map[string]*Lease
	closed bool
	resetq chan *slot    // slots to reset, each at most once (queueReset)
	stop   chan struct{} // closed by Down
	wg     sync.WaitGroup
	stats  Stats
	// checked is 1 + the count of leases (Stats.Leases) at the last
	// release --unchanged that was checked, 0 before the first
	// (marksRead).
	checked int64
	// lastLease is when a lease was last handed out, for least-recently-
	// used shrinking.
	lastLease time.Time
	log       *slog.Logger
	// lost are the leases that ended without their holder releasing them,
	// oldest first in lostOrder, so a holder is told why.
	lost      map[string]LostLease
	lostOrder []string
	// diskCap says how slots are capped, or why they are not.
	diskCap string
	// groups are the slots' cgroups (nil: none; slotgroups.go); memCap
	// says how slots' memory is bounded, procCap how their processes are
	// held.
	groups  *slotGroups
	memCap  string
	procCap string
	// ops touch servers and files; fakes in unit tests.
	ops ops
	// retryEvery is the pause before a failed reset is retried.
	retryEvery time.Duration

	// spares is the state of growing for waits (spares.go).
	spares spareState
	// start is the state of the pool's start (start.go).
	start startState
	// downMu makes concurrent Downs one after the other.
	downMu sync.Mutex
}

// Dir is where a template's pool keeps its clones.
func Dir(cat *catalog.Catalog, m *catalog.Meta) string {
	return filepath.Join(cat.Root().Data(), "pools", m.Hash[:16])
}

// Up brings up a pool of opt.Size slots of template m, which lies in cat,
// on servers run by bin: Prepare, then Start. It returns once
// opt.MinReady slots answered a query (every slot when MinReady is 0);
// the others go on starting in the background. On failure, everything it
// started is stopped and removed.
func Up(ctx context.Context, cat *catalog.Catalog, bin *mariadb.Binary, m *catalog.Meta, opt Options) (*Pool, error) {
	p, err := Prepare(cat, bin, m, opt)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Prepare checks that a pool of opt.Size slots of template m fits and
// makes it, every slot starting and none started yet: the pool can be
// registered and leased from (a lease waits) before Start starts its
// slots. A prepared pool that is not started is brought down with Down.
func Prepare(cat *catalog.Catalog, bin *mariadb.Binary, m *catalog.Meta, opt Options) (*Pool, error) {
	if opt.Size < 1 {
		return nil, fmt.Errorf("pool size %d: need at least 1 slot", opt.Size)
	}
	if opt.Size > MaxSlots {
		return nil, fmt.Errorf("%w: pool size %d: at most %d slots", ErrTooLarge, opt.Size, MaxSlots)
	}
	if m.Server != bin.Version {
		return nil, fmt.Errorf("template %s was built by server %s but %s is installed: build it again (pristine template build %s ...)", m.Name, m.Server, bin.Version, m.Name)
	}
	if err := catalog.CheckSecured(m); err != nil {
		return nil, err
	}
	// The template's options were checked when it was built or imported;
	// checked again here, so a meta.json from before the allow-list, or
	// edited on disk, starts no server.
	if err := catalog.CheckServerOptions(m); err != nil {
		return nil, err
	}
	if opt.Profile.LogFileSize == 0 {
		opt.Profile = mariadb.DefaultProfile()
	}
	opt.Profile.LogFileSize = m.LogFileSize
	opt.Profile.Options = m.ServerOptions // the server the template was built with
	backend, err := cat.BackendFor(m)
	if err != nil {
		return nil, err
	}
	if err := Preflight(cat, backend, m, opt); err != nil {
		return nil, err
	}
	p := newPool(m, opt, Dir(cat, m), filepath.Join(cat.Root().Path, "run", m.Hash[:8]))
	p.cat, p.bin, p.backend = cat, bin, backend
	p.ops = ops{clone: p.cloneSlot, boot: p.bootServer, diskUsed: usedBlocks, claimIDs: p.claimIDs}
	if _, err := os.Stat(p.dir); err == nil && len(opt.Restore) == 0 {
		return nil, fmt.Errorf("a pool of template %s already exists at %s: run `pristine pool down --template %s` first", m.Name, p.dir, m.Name)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("pool up: %w", err)
	}
	_ = cat.Touch(m)
	p.options.clear()
	p.setupGroups()
	if err := p.makeSlots(); err != nil {
		return nil, err
	}
	return p, nil
}

// DefaultParallel is how many slots are started at once when
// Options.Parallel names no number: 4 per core.
func DefaultParallel() int { return 4 * runtime.NumCPU() }

// newPool makes a pool of template m with no slots yet, its clones under
// dir and its sockets and logs under run, and fills in opt's defaults.
func newPool(m *catalog.Meta, opt Options, dir, run string) *Pool {
	if opt.Parallel <= 0 {
		opt.Parallel = DefaultParallel()
	}
	if opt.ResetWorkers <= 0 {
		opt.ResetWorkers = runtime.NumCPU()
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{Meta: m, opt: opt, dir: dir, run: run,
		wake: make(chan struct{}), leases: map[string]*Lease{},
		resetq: make(chan *slot, max(opt.Size, MaxSlots)), stop: make(chan struct{}), log: opt.Log, lost: map[string]LostLease{},
		retryEvery: time.Second}
	p.options.spares = optionSpares(run)
	p.stats.SlotDeaths, p.stats.LeasesLost = map[string]int64{}, map[string]int64{}
	return p
}

// up makes the pool's slots and starts them (Start); the unit tests'
// way in, after newPool.
func (p *Pool) up(ctx context.Context) error {
	if err := p.makeSlots(); err != nil {
		return err
	}
	return p.Start(ctx)
}

// makeSlots makes the pool's slots, each Starting, and plans which
// leases of Options.Restore they bring back.
func (p *Pool) makeSlots() error {
	p.mu.Lock()
	for i := 0; i < max(p.opt.Size, min(p.opt.Slots, MaxSlots)); i++ {
		s := &slot{idx: i, dir: filepath.Join(p.dir, fmt.Sprintf("%03d", i)), run: filepath.Join(p.run, strconv.Itoa(i))}
		for _, db := range p.Meta.Databases {
			s.units = append(s.units, unit{db: db})
		}
		s.clone = readCloneID(s.dir)
		if err := p.move(s, Starting, "pool up"); err != nil {
			p.mu.Unlock()
			return err
		}
		p.slots = append(p.slots, s)
	}
	p.mu.Unlock()
	p.planRestore(p.opt.Restore)
	return nil
}
