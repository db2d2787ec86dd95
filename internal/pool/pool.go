package pool

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/svcuser"
	"github.com/pristinedb/pristine/internal/units"
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
	// Progress, when set, is told how many slots are ready during Up; it is
	// called by one goroutine at a time.
	Progress func(ready, total int)
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
	// usable, each slot server's memory in all (memLimit; memcg.go).
	// 0: the server's defaults, which a lease can raise without bound.
	SlotMemory int64
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
	dir     string // clones live in dir/NNN/data
	run     string // sockets and logs live in run/NNN

	mu     sync.Mutex
	wake   chan struct{} // closed and replaced whenever a unit may have become free
	slots  []*slot
	leases map[string]*Lease
	closed bool
	resetq chan *slot
	stop   chan struct{} // closed by Down
	wg     sync.WaitGroup
	stats  Stats
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
	// memcg are the slots' memory groups (nil: none); memCap says how
	// slots' memory is bounded.
	memcg  *memCgroups
	memCap string
	// ops touch servers and files; fakes in unit tests.
	ops ops
	// retryEvery is the pause before a failed reset is retried.
	retryEvery time.Duration
}

// Dir is where a template's pool keeps its clones.
func Dir(cat *catalog.Catalog, m *catalog.Meta) string {
	return filepath.Join(cat.Root().Data(), "pools", m.Hash[:16])
}

// Up brings up a pool of opt.Size slots of template m, which lies in cat,
// on servers run by bin, and returns when every slot has answered a query. On failure, everything it started is stopped
// and removed.
func Up(ctx context.Context, cat *catalog.Catalog, bin *mariadb.Binary, m *catalog.Meta, opt Options) (*Pool, error) {
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
	p.ops = ops{clone: p.cloneSlot, boot: p.bootServer, diskUsed: usedBlocks}
	if _, err := os.Stat(p.dir); err == nil && len(opt.Restore) == 0 {
		return nil, fmt.Errorf("a pool of template %s already exists at %s: run `pristine pool down --template %s` first", m.Name, p.dir, m.Name)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("pool up: %w", err)
	}
	_ = cat.Touch(m)
	p.setupMemory()
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// newPool makes a pool of template m with no slots yet, its clones under
// dir and its sockets and logs under run, and fills in opt's defaults.
func newPool(m *catalog.Meta, opt Options, dir, run string) *Pool {
	if opt.Parallel <= 0 {
		opt.Parallel = 4 * runtime.NumCPU()
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
	p.stats.SlotDeaths, p.stats.LeasesLost = map[string]int64{}, map[string]int64{}
	return p
}

// up makes the pool's slots, starts them (restoring Options.Restore) and
// the background workers. On failure, everything it started is stopped
// and removed.
func (p *Pool) up(ctx context.Context) error {
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
	start := time.Now()
	if err := p.startAll(ctx); err != nil {
		p.Down(context.Background())
		return err
	}
	p.stats.UpSeconds = time.Since(start).Seconds()
	p.lastLease = time.Now()
	for i := 0; i < p.opt.ResetWorkers; i++ {
		p.wg.Add(1)
		go p.resetWorker()
	}
	p.wg.Add(1)
	go p.janitor()
	if p.opt.SlotDisk > 0 {
		p.wg.Add(1)
		go p.diskWatch()
	}
	return nil
}

// startAll clones every slot, then starts every server, opt.Parallel at a
// time. Cloning first keeps btrfs snapshots cheap: a snapshot commits the
// filesystem's transaction, which is quick only while no server is writing.
func (p *Pool) startAll(ctx context.Context) error {
	err := p.parallel(ctx, p.opt.Parallel, func(ctx context.Context, s *slot) error {
		if len(s.restore) > 0 {
			if _, err := os.Stat(filepath.Join(s.dir, "data")); err == nil {
				return nil // restart on the clone its leases were using
			}
			p.loseRestore(s, ReasonCloneReplaced, fmt.Sprintf("slot %d's clone was gone when the daemon restarted", s.idx))
		}
		return p.ops.clone(ctx, s)
	})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	ready := 0
	return p.parallel(ctx, p.opt.Parallel, func(ctx context.Context, s *slot) error {
		p.mu.Lock()
		gen := s.gen
		p.mu.Unlock()
		err := p.bootSlot(ctx, s, gen)
		if err != nil && len(s.restore) > 0 && ctx.Err() == nil {
			// The clone did not survive: its leases are lost, the slot is new.
			p.loseRestore(s, ReasonRestoreFailed, fmt.Sprintf("slot %d did not start again on its clone after a daemon restart: %v", s.idx, err))
			err = p.startSlot(ctx, s, gen)
		}
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		ready++
		if p.opt.Progress != nil {
			p.opt.Progress(ready, len(p.slots))
		}
		return nil
	})
}

// parallel runs f on every slot, n at a time, and returns the first error
// (which cancels the rest).
func (p *Pool) parallel(ctx context.Context, n int, f func(context.Context, *slot) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, n)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, s := range p.slots {
		wg.Add(1)
		sem <- struct{}{}
		go func(s *slot) {
			defer wg.Done()
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			if err := f(ctx, s); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}(s)
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// startSlot clones the template for s and starts a server on the clone,
// for work begun at the slot's generation gen.
func (p *Pool) startSlot(ctx context.Context, s *slot, gen uint64) error {
	if err := p.ops.clone(ctx, s); err != nil {
		return err
	}
	return p.bootSlot(ctx, s, gen)
}

// cloneSlot throws away the slot's old clone, if any, and clones the
// template afresh. The clone's id file goes first and comes back last,
// with a new id, so a daemon killed half-way never restores a lease onto
// a clone it was not handed out on.
func (p *Pool) cloneSlot(_ context.Context, s *slot) error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("slot %d: %w", s.idx, err)
	}
	idFile := filepath.Join(s.dir, cloneIDFile)
	if err := os.Remove(idFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("slot %d: remove the old clone's id: %w", s.idx, err)
	}
	s.clone = ""
	// The run directory is the server's tmpdir: a holder's files there
	// (INTO OUTFILE) must not reach the next holder either.
	if err := p.cat.Root().Check(s.run); err != nil {
		return fmt.Errorf("slot %d: %w", s.idx, err)
	}
	if err := os.RemoveAll(s.run); err != nil {
		return fmt.Errorf("slot %d: empty the run directory: %w", s.idx, err)
	}
	if err := p.backend.Remove(data); err != nil {
		return fmt.Errorf("slot %d: remove old clone: %w", s.idx, err)
	}
	sid, err := p.slotID(s)
	if err != nil {
		return fmt.Errorf("slot %d: %w", s.idx, err)
	}
	src, err := p.seed(s, sid)
	if err != nil {
		return fmt.Errorf("slot %d: %w", s.idx, err)
	}
	if err := cow.CloneAs(p.backend, src, data, ownerUnless(sid, src != p.cat.DataDir(p.Meta.Hash))); err != nil {
		return fmt.Errorf("slot %d: clone template: %w", s.idx, err)
	}
	if err := p.capSlot(data); err != nil {
		return fmt.Errorf("slot %d: %w", s.idx, err)
	}
	id := randomHex(8)
	if err := os.WriteFile(idFile, []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("slot %d: record the clone's id: %w", s.idx, err)
	}
	s.clone = id
	return nil
}

// slotID is the server id of slot s (svcuser.Claim): claimed for the
// slot's clone on its first clone, kept across resets (the same slot's
// next clone) and released by Down or Shrink once the clone is gone. Its server runs
// as it and its clone and run directory belong to it, so even root of the
// slot can write nowhere but there.
func (p *Pool) slotID(s *slot) (*svcuser.Claimed, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.id != nil {
		return s.id, nil
	}
	id, err := svcuser.Claim(filepath.Join(s.dir, "data"))
	if err != nil {
		return nil, err
	}
	s.id = id
	return id, nil
}

// seedsDir holds the slots' seeds (see seed): root's, 0700, so no server
// can reach the seed its own id owns.
const seedsDir = ".seeds"

// seed returns what slot s's clone is made from. On btrfs, where a
// snapshot keeps its source's owners and chowning each fresh snapshot
// costs a metadata copy of the template (measured: a clone and removal of
// the demo template 10 ms plain, 40-80 ms chowned), each slot has a seed:
// a snapshot of the template given to the slot's id once, at its first
// clone, under seedsDir. Every reset then snapshots the seed, already the
// slot's id's, at a plain snapshot's cost (2 ms). Other backends give each
// file its owner as they make it, and clone the template itself.
func (p *Pool) seed(s *slot, id *svcuser.Claimed) (string, error) {
	tmpl := p.cat.DataDir(p.Meta.Hash)
	own := owner(id)
	if own == nil || p.backend.Name() != "btrfs" {
		return tmpl, nil
	}
	dir := filepath.Join(p.dir, seedsDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("make the seeds directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	seed := filepath.Join(dir, fmt.Sprintf("%03d", s.idx))
	var st syscall.Stat_t
	if err := syscall.Lstat(seed, &st); err == nil {
		if int(st.Uid) == own.UID {
			return seed, nil
		}
		// Another id's (a restart gave the slot a new one): make it again.
		if err := p.backend.Remove(seed); err != nil {
			return "", fmt.Errorf("remove a stale seed: %w", err)
		}
	}
	if err := cow.CloneAs(p.backend, tmpl, seed, own); err != nil {
		return "", fmt.Errorf("make the slot's seed: %w", err)
	}
	return seed, nil
}

// ownerUnless is owner(id), or nil when the source already belongs to id.
func ownerUnless(id *svcuser.Claimed, owned bool) *cow.Owner {
	if owned {
		return nil
	}
	return owner(id)
}

// releaseID gives slot s's server id back once its clone is gone: its run
// directory and its seed go first, so nothing the id owns is left under
// the root.
func (p *Pool) releaseID(s *slot) {
	if p.cat != nil {
		if err := p.cat.Root().Check(s.run); err == nil {
			_ = os.RemoveAll(s.run)
		}
	}
	seed := filepath.Join(p.dir, seedsDir, fmt.Sprintf("%03d", s.idx))
	if _, err := os.Lstat(seed); err == nil {
		if err := p.backend.Remove(seed); err != nil {
			p.log.Warn("a slot's seed was not removed, so its server id is kept", "template", p.Meta.Name, "slot", s.idx, "error", err.Error())
			return
		}
	}
	p.mu.Lock()
	id := s.id
	s.id = nil
	p.mu.Unlock()
	id.Release()
}

// owner is who a clone's files belong to: the server id, or nil (the
// template's owner) when servers run as pristine's own user.
func owner(id *svcuser.Claimed) *cow.Owner {
	if id == nil || !id.Drop {
		return nil
	}
	return &cow.Owner{UID: id.UID, GID: id.GID}
}

// capSlot caps the disk of a fresh clone (Options.SlotDisk). A filesystem
// that cannot enforce it is noted once, in the log and in Status, and the
// slot goes uncapped.
func (p *Pool) capSlot(data string) error {
	if p.opt.SlotDisk <= 0 {
		return nil
	}
	c, ok := p.backend.(cow.Capper)
	var err error
	if ok {
		err = c.Cap(data, p.opt.SlotDisk+hardHeadroom(p.opt.SlotDisk))
	} else {
		err = fmt.Errorf("%w: the %s backend copies every file, and a copy cannot be capped apart from the filesystem", cow.ErrNoQuota, p.backend.Name())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.diskCap = fmt.Sprintf("%s per slot, watched; hard cap at %s (%s)", units.Bytes(p.opt.SlotDisk),
			units.Bytes(p.opt.SlotDisk+hardHeadroom(p.opt.SlotDisk)), map[string]string{"btrfs": "btrfs qgroup", "reflink": "XFS project quota"}[p.backend.Name()])
	case errors.Is(err, cow.ErrNoQuota):
		if !strings.Contains(p.diskCap, "watched only") {
			p.log.Warn("slots have no hard disk cap, only the watched one", "template", p.Meta.Name, "reason", err.Error())
		}
		p.diskCap = fmt.Sprintf("%s per slot, watched only (no hard cap: %v)", units.Bytes(p.opt.SlotDisk), err)
	default:
		return err
	}
	return nil
}

// cloneIDFile, beside a slot's clone, names the clone: a new random id for
// every clone, recorded in each lease handed out on it.
const cloneIDFile = "clone-id"

// readCloneID returns the id of the clone in slot directory dir, or "".
func readCloneID(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, cloneIDFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// planRestore decides which leases of a previous daemon come back: those
// recorded on the clone each slot still has, the newest one per database.
// The others are lost. Each slot asks for the port its newest lease knows.
func (p *Pool) planRestore(leases []Lease) {
	sort.Slice(leases, func(i, j int) bool { return leases[i].Created.After(leases[j].Created) })
	type unitKey struct {
		slot int
		db   string
	}
	taken := map[unitKey]string{}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range leases {
		if l.Slot < 0 || l.Slot >= len(p.slots) {
			p.lose(l, ReasonCloneReplaced, fmt.Sprintf("the pool has %d slots now and slot %d is gone", len(p.slots), l.Slot))
			continue
		}
		s := p.slots[l.Slot]
		k := unitKey{l.Slot, l.Database}
		switch {
		case s.clone == "" || l.Clone != s.clone:
			p.lose(l, ReasonCloneReplaced, fmt.Sprintf("slot %d was reset (its clone replaced) after this lease was handed out, before the daemon restarted", l.Slot))
		case !s.hasDB(l.Database):
			p.lose(l, ReasonCloneReplaced, fmt.Sprintf("slot %d has no database %q", l.Slot, l.Database))
		case taken[k] != "":
			p.lose(l, ReasonSuperseded, fmt.Sprintf("lease %s of the same database of slot %d was handed out later", taken[k], l.Slot))
		default:
			taken[k] = l.ID
			s.restore = append(s.restore, l)
			if s.wantPort == 0 {
				s.wantPort = l.Port
			}
		}
	}
}

// loseRestore loses the leases a slot was to restore and makes it a new
// slot.
func (p *Pool) loseRestore(s *slot, reason, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range s.restore {
		p.lose(l, reason, detail)
	}
	s.restore, s.wantPort = nil, 0
}

// bootSlot starts a server on the slot's clone (ops.boot) and publishes
// it: the slot becomes Ready, or Leased or Kept with the leases it
// restores. gen is the slot's generation when the work began; a slot that
// moved on meanwhile keeps its state and the new server is killed
// (errMovedOn).
func (p *Pool) bootSlot(ctx context.Context, s *slot, gen uint64) error {
	b, err := p.ops.boot(ctx, s)
	if err != nil {
		return err
	}
	return p.publish(s, gen, b)
}

// bootServer starts a server on the slot's clone, waits until it answers
// and makes each unit's lease account. A port taken by another program is
// retried on another.
func (p *Pool) bootServer(ctx context.Context, s *slot) (*booted, error) {
	data := filepath.Join(s.dir, "data")
	port := s.wantPort
	id, err := p.slotID(s)
	if err != nil {
		return nil, fmt.Errorf("slot %d: %w", s.idx, err)
	}
	extra, err := slotArgs(data, p.opt)
	if err != nil {
		return nil, fmt.Errorf("slot %d: %w", s.idx, err)
	}
	for try := 0; try < 3; try++ {
		var in *mariadb.Instance
		in, err = mariadb.Start(p.bin, mariadb.Config{Datadir: data, RunDir: s.run, Port: port, Profile: p.opt.Profile, AdminPassword: p.cat.Admin(), Extra: extra, Account: &id.Account})
		if err != nil {
			break
		}
		if err = p.limitMemory(s.idx, in.PID()); err == nil {
			err = in.WaitReady(ctx)
		}
		if err == nil {
			var b *booted
			if b, err = p.prepareUnits(ctx, s, in); err == nil {
				return b, nil
			}
		}
		in.Kill()
		if !errors.Is(err, mariadb.ErrPortInUse) {
			break
		}
		port = 0
	}
	return nil, fmt.Errorf("slot %d: %w", s.idx, err)
}

// prepareUnits makes the lease accounts of a freshly started server (or
// finds a restored lease's) and records its port, write counters and
// files.
func (p *Pool) prepareUnits(ctx context.Context, s *slot, in *mariadb.Instance) (*booted, error) {
	admin, err := openAdmin(in)
	if err != nil {
		return nil, err
	}
	if len(s.restore) == 0 {
		p.exportMeta(ctx, admin, s) // for the in-place reset (inplace.go)
	}
	b, err := prepare(ctx, s, admin, p.opt.SlotDisk > 0)
	if err != nil {
		admin.Close()
		return nil, err
	}
	b.srv = &liveServer{Instance: in, admin: admin}
	return b, nil
}

// prepare does prepareUnits' queries over admin.
func prepare(ctx context.Context, s *slot, admin *sql.DB, capped bool) (*booted, error) {
	b := &booted{accts: make([]account, len(s.units)), restored: make([]bool, len(s.units))}
	for i := range s.units {
		db := s.units[i].db
		if l := s.restoredLease(db); l != nil {
			// The account of a lease from before a restart lives in the
			// clone, unless crash recovery lost it.
			ok, err := accountExists(ctx, admin, l.User)
			if err != nil {
				return nil, err
			}
			if ok {
				b.accts[i], b.restored[i] = account{user: l.User, password: l.Password}, true
				continue
			}
		}
		var err error
		if b.accts[i], err = newAccount(ctx, admin, db, len(s.units)); err != nil {
			return nil, err
		}
	}
	var err error
	if b.mark, err = writeMark(ctx, admin); err != nil {
		return nil, err
	}
	if b.inplace, err = bootBase(ctx, admin, s, b.mark); err != nil {
		return nil, err
	}
	if b.port, err = serverPort(ctx, admin); err != nil {
		return nil, err
	}
	if b.files, err = markFiles(slotDirs(s)...); err != nil {
		return nil, err
	}
	if capped {
		b.base = usedBlocks(filepath.Join(s.dir, "data"))
	}
	return b, nil
}

// publish makes a booted server the slot's and moves the slot on: to
// Ready, or with leases restored after a daemon restart to Leased (Kept
// for a kept lease). A restored lease whose account the clone lost is
// lost; a slot that restored none is reset. gen is the slot's generation
// when the boot began: if the slot moved on since, b is killed and
// errMovedOn returned.
func (p *Pool) publish(s *slot, gen uint64, b *booted) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.gen != gen {
		b.srv.kill()
		return fmt.Errorf("slot %d: start dropped: %w", s.idx, errMovedOn)
	}
	units := make([]unit, len(s.units))
	for i := range units {
		units[i] = unit{db: s.units[i].db, acct: b.accts[i]}
		l := s.restoredLease(units[i].db)
		if l == nil {
			continue
		}
		if !b.restored[i] {
			p.lose(*l, ReasonNoAccount, fmt.Sprintf("slot %d came back after a daemon restart without the lease's account (crash recovery lost it)", s.idx))
			continue
		}
		l.restored = true
		units[i].lease, units[i].spent = l, true
	}
	if s.srv != nil {
		s.srv.kill() // a server left behind; none is expected
	}
	// The port is the one the server listens on, which a restored lease
	// may not have recorded (its port was taken meanwhile).
	s.srv, s.port, s.wantPort, s.mark, s.files = b.srv, b.port, 0, b.mark, b.files
	s.baseBlocks, s.overCap = b.base, false
	s.err = ""
	s.units = units
	restoring := len(s.restore) > 0
	s.restore = nil
	if s.inplace = b.inplace; restoring {
		s.inplace = nil // counted from after the restored holders' writes: never in place
	}
	to, why := Ready, "the server answered"
	for i := range units {
		l := units[i].lease
		if l == nil {
			// A clone restarted for its leases was written by holders it
			// may no longer serve: none of its databases is fresh.
			units[i].spent = units[i].spent || restoring
			continue
		}
		l.fill(s, &s.units[i])
		p.leases[l.ID] = l
		p.record(l)
		to, why = Leased, "restarted on its clone with its leases"
		if l.Kept && len(units) == 1 {
			to, why = Kept, "restarted on its clone with its kept lease"
		}
	}
	if restoring && s.active() == 0 {
		to, why = Leased, "restarted on its clone, every lease of it lost" // then reset
	}
	if err := p.move(s, to, why); err != nil {
		b.srv.kill()
		s.srv = nil
		return err
	}
	p.resetIfDone(s)
	p.signal()
	go p.watch(s, b.srv)
	return nil
}

// watch replaces a slot whose server dies while it is ready, leased or
// kept; its leases are lost, with the reason.
func (p *Pool) watch(s *slot, srv server) {
	<-srv.Done()
	reason, detail := srv.exitReason()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || s.srv != srv || (s.state != Ready && s.state != Leased && s.state != Kept) {
		return // killed by the pool: reset, retired or shut down
	}
	reason, detail = overCapExit(s, reason, detail)
	reason, detail = p.memoryExit(s, reason, detail)
	s.err = detail
	p.emit(Event{Kind: EventSlotDied, Slot: s.idx, Reason: reason, Detail: detail})
	for i := range s.units {
		if l := s.units[i].lease; l != nil {
			p.lose(*l, reason, fmt.Sprintf("slot %d's server died: %s", s.idx, detail))
		}
		s.units[i].lease, s.units[i].spent = nil, true
	}
	if p.move(s, Failed, "its server died") != nil {
		return
	}
	p.stats.Replaced++
	p.resetq <- s
}

// Down stops every server of the pool and removes every clone. It is safe
// to call more than once.
func (p *Pool) Down(ctx context.Context) error {
	p.mu.Lock()
	wasClosed := p.closed
	p.closed = true
	p.signal()
	p.mu.Unlock()
	if !wasClosed {
		close(p.resetq)
		close(p.stop)
	}
	p.wg.Wait()
	var wg sync.WaitGroup
	errs := make([]error, len(p.slots))
	sem := make(chan struct{}, p.opt.Parallel)
	for i, s := range p.slots {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, s *slot) {
			defer wg.Done()
			defer func() { <-sem }()
			p.mu.Lock()
			srv := s.srv
			p.mu.Unlock()
			if srv != nil {
				srv.kill()
			}
			errs[i] = p.backend.Remove(filepath.Join(s.dir, "data"))
			if errs[i] == nil {
				p.releaseID(s)
			}
		}(i, s)
	}
	wg.Wait()
	if p.memcg != nil {
		p.memcg.remove(len(p.slots))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pool down: %w", err)
	}
	if err := p.cat.Root().Check(p.dir); err == nil {
		if err := os.RemoveAll(p.dir); err != nil {
			return fmt.Errorf("pool down: %w", err)
		}
	}
	if err := p.cat.Root().Check(p.run); err == nil {
		_ = os.RemoveAll(p.run)
	}
	return nil
}
