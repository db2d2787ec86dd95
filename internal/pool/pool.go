package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
)

// Options shapes a pool.
type Options struct {
	Size    int             // number of slots (servers)
	Profile mariadb.Profile // server profile of every slot
	// Parallel is how many slots are cloned and started at once; default
	// 4 per core.
	Parallel int
	// ResetWorkers is how many slots are reset at once in the background;
	// default two per core (a reset waits on the server half the time).
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
	// their slots start again on their existing clones (crash recovery) on
	// the same port, and the leases stay valid.
	Restore []Lease
}

// Errors callers map to messages, exit codes and HTTP statuses.
var (
	ErrClosed       = errors.New("pool is shutting down")
	ErrUnknownLease = errors.New("unknown lease")
	ErrLeaseTimeout = errors.New("no slot became free in time")
)

// Pool is a set of slots of one template.
type Pool struct {
	Meta    *template.Meta
	store   *template.Store
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
	wg     sync.WaitGroup
	stats  Stats
	// lastLease is when a lease was last handed out, for least-recently-
	// used shrinking.
	lastLease time.Time
}

// Dir is where a template's pool keeps its clones.
func Dir(store *template.Store, m *template.Meta) string {
	return filepath.Join(store.Root.Data(), "pools", m.Hash[:16])
}

// Up brings up a pool of opt.Size slots of template m and returns when every
// slot has answered a query. On failure, everything it started is stopped
// and removed.
func Up(ctx context.Context, store *template.Store, m *template.Meta, opt Options) (*Pool, error) {
	if opt.Size < 1 {
		return nil, fmt.Errorf("pool size %d: need at least 1 slot", opt.Size)
	}
	if m.Server != store.Bin.Version {
		return nil, fmt.Errorf("template %s was built by server %s but %s is installed: build it again (pristine template build %s ...)", m.Name, m.Server, store.Bin.Version, m.Name)
	}
	if err := template.CheckSecured(m); err != nil {
		return nil, err
	}
	if opt.Profile.LogFileSize == 0 {
		opt.Profile = mariadb.DefaultProfile()
	}
	opt.Profile.LogFileSize = m.LogFileSize
	if opt.Parallel <= 0 {
		opt.Parallel = 4 * runtime.NumCPU()
	}
	if opt.ResetWorkers <= 0 {
		opt.ResetWorkers = 2 * runtime.NumCPU()
	}
	backend, err := store.BackendFor(m)
	if err != nil {
		return nil, err
	}
	if err := Preflight(store, backend, m, opt); err != nil {
		return nil, err
	}
	p := &Pool{Meta: m, store: store, backend: backend, opt: opt, dir: Dir(store, m),
		run:  filepath.Join(store.Root.Path, "run", m.Hash[:8]),
		wake: make(chan struct{}), leases: map[string]*Lease{},
		resetq: make(chan *slot, opt.Size)}
	if _, err := os.Stat(p.dir); err == nil && len(opt.Restore) == 0 {
		return nil, fmt.Errorf("a pool of template %s already exists at %s: run `pristine pool down --template %s` first", m.Name, p.dir, m.Name)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("pool up: %w", err)
	}
	_ = store.Touch(m)
	for i := 0; i < opt.Size; i++ {
		s := &slot{idx: i, dir: filepath.Join(p.dir, fmt.Sprintf("%03d", i)), run: filepath.Join(p.run, strconv.Itoa(i))}
		for _, db := range m.Databases {
			s.units = append(s.units, unit{db: db})
		}
		s.set(Starting)
		p.slots = append(p.slots, s)
	}
	for _, l := range opt.Restore {
		if l.Slot >= 0 && l.Slot < len(p.slots) {
			s := p.slots[l.Slot]
			s.restore = append(s.restore, l)
			s.wantPort = l.Port
		}
	}
	start := time.Now()
	if err := p.startAll(ctx); err != nil {
		p.Down(context.Background())
		return nil, err
	}
	p.stats.UpSeconds = time.Since(start).Seconds()
	p.lastLease = time.Now()
	for i := 0; i < opt.ResetWorkers; i++ {
		p.wg.Add(1)
		go p.resetWorker()
	}
	p.wg.Add(1)
	go p.janitor()
	return p, nil
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
			s.restore = nil
		}
		return p.cloneSlot(ctx, s)
	})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	ready := 0
	return p.parallel(ctx, p.opt.Parallel, func(ctx context.Context, s *slot) error {
		err := p.bootSlot(ctx, s)
		if err != nil && len(s.restore) > 0 {
			// The clone did not survive: its leases are lost, the slot is new.
			s.restore, s.wantPort = nil, 0
			err = p.startSlot(ctx, s)
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

// startSlot clones the template for s and starts a server on the clone.
func (p *Pool) startSlot(ctx context.Context, s *slot) error {
	if err := p.cloneSlot(ctx, s); err != nil {
		return err
	}
	return p.bootSlot(ctx, s)
}

// cloneSlot throws away the slot's old clone, if any, and clones the
// template afresh.
func (p *Pool) cloneSlot(_ context.Context, s *slot) error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("slot %d: %w", s.idx, err)
	}
	if err := p.backend.Remove(data); err != nil {
		return fmt.Errorf("slot %d: remove old clone: %w", s.idx, err)
	}
	if err := p.backend.Clone(p.store.DataDir(p.Meta.Hash), data); err != nil {
		return fmt.Errorf("slot %d: clone template: %w", s.idx, err)
	}
	return nil
}

// bootSlot starts a server on the slot's clone, waits until it answers and
// makes each unit's lease account; s becomes Ready. A port taken by another
// program is retried on another.
func (p *Pool) bootSlot(ctx context.Context, s *slot) error {
	data := filepath.Join(s.dir, "data")
	var err error
	for try := 0; try < 3; try++ {
		var in *mariadb.Instance
		in, err = mariadb.Start(p.store.Bin, mariadb.Config{Datadir: data, RunDir: s.run, Port: s.wantPort, Profile: p.opt.Profile, AdminPassword: p.store.Admin})
		if err != nil {
			break
		}
		if err = in.WaitReady(ctx); err == nil {
			if err = p.prepareUnits(ctx, s, in); err == nil {
				return nil
			}
		}
		in.Kill()
		if !errors.Is(err, mariadb.ErrPortInUse) {
			break
		}
		s.wantPort = 0
	}
	return fmt.Errorf("slot %d: %w", s.idx, err)
}

// prepareUnits makes the lease accounts of a freshly started server and
// records its write counters, then publishes the slot as Ready.
func (p *Pool) prepareUnits(ctx context.Context, s *slot, in *mariadb.Instance) error {
	admin, err := openAdmin(in)
	if err != nil {
		return err
	}
	units := make([]unit, len(s.units))
	var restored []*Lease
	for i := range units {
		units[i].db = s.units[i].db
		if l := s.restoredLease(units[i].db); l != nil {
			// The account of a lease from before a restart lives in the clone.
			units[i].acct = account{user: l.User, password: l.Password}
			units[i].lease, units[i].spent = l, true
			restored = append(restored, l)
			continue
		}
		if units[i].acct, err = newAccount(ctx, admin, units[i].db, len(units) > 1); err != nil {
			admin.Close()
			return err
		}
	}
	mark, err := writeMark(ctx, admin)
	if err != nil {
		admin.Close()
		return err
	}
	p.mu.Lock()
	if s.admin != nil {
		s.admin.Close()
	}
	s.inst, s.admin, s.port, s.wantPort, s.mark = in, admin, in.Config.Port, 0, mark
	s.err = ""
	s.units = units
	s.restore = nil
	s.set(Ready)
	for _, l := range restored {
		l.Socket = in.Config.Socket()
		l.gen = s.gen
		p.leases[l.ID] = l
		s.state = Leased
		if l.Kept && len(units) == 1 {
			s.state = Kept
		}
	}
	gen := s.gen
	p.signal()
	p.mu.Unlock()
	go p.watch(s, in, gen)
	return nil
}

// watch replaces a slot whose server dies while it is ready or leased.
func (p *Pool) watch(s *slot, in *mariadb.Instance, gen uint64) {
	<-in.Done()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || s.inst != in || (s.state != Ready && s.state != Leased) {
		return
	}
	s.err = "server exited: " + in.LogTail(2)
	for i := range s.units {
		if l := s.units[i].lease; l != nil {
			p.forget(l)
		}
		s.units[i].lease, s.units[i].spent = nil, true
	}
	s.set(Failed)
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
			in, admin := s.inst, s.admin
			p.mu.Unlock()
			if admin != nil {
				admin.Close()
			}
			if in != nil {
				in.Kill()
			}
			errs[i] = p.backend.Remove(filepath.Join(s.dir, "data"))
		}(i, s)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pool down: %w", err)
	}
	if err := p.store.Root.Check(p.dir); err == nil {
		if err := os.RemoveAll(p.dir); err != nil {
			return fmt.Errorf("pool down: %w", err)
		}
	}
	if err := p.store.Root.Check(p.run); err == nil {
		_ = os.RemoveAll(p.run)
	}
	return nil
}
