// Package server is pristine's daemon: it owns the pools of a root, keeps
// their servers running, and answers an HTTP/JSON API on a unix socket under
// the root. The CLI's pool, lease and release commands are clients of it.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/state"
	"github.com/pristinedb/pristine/internal/template"
)

// SocketPath is where the daemon of a root listens.
func SocketPath(root *rootdir.Root) string { return filepath.Join(root.Path, "pristine.sock") }

// Server owns the pools of one root.
type Server struct {
	root    *rootdir.Root
	cat     *catalog.Catalog
	builder *template.Builder
	log     *slog.Logger
	// ExitWhenIdle makes Serve return once the last pool is down (a daemon
	// started on demand by `pool up`).
	ExitWhenIdle bool
	// Token is the bearer token TCP clients must present.
	Token string
	// TLS, when set, makes the API over TCP serve HTTPS.
	TLS *tls.Config
	// Timeouts bound the API's connections (zero: DefaultTimeouts).
	Timeouts Timeouts
	// MaxConns and MaxConnsPerAddress cap the API's TCP connections open
	// at once, in all and from one remote address (0: ConnCaps of the
	// open-file limit); one more is closed at once. The unix socket is
	// not counted.
	MaxConns           int
	MaxConnsPerAddress int
	peerLogs           peerLogs
	// Budget caps the memory and disk of all pools together.
	Budget Budget
	// MaxWaiters caps the lease requests in progress at once (0:
	// DefaultMaxWaiters); one more is answered 429 with Retry-After.
	MaxWaiters int
	// MaxSpares is how many slots beyond its size (or the size a client
	// grew it to) a pool may grow by itself, one at a time, while lease
	// requests wait behind resets; within Budget; retired again after
	// ShrinkAfter idle. 0: never. The CLI's default is DefaultMaxSpares.
	MaxSpares int
	// ShrinkAfter is how long a slot beyond its pool's base size may stay
	// ready and unused before it is retired (a pool grows for a client
	// that needs more slots); 0 or less: never. The CLI's default is
	// DefaultShrinkAfter.
	ShrinkAfter time.Duration
	growMu      sync.Mutex
	// Network makes the slots of every pool reachable from other
	// machines (SlotNetwork); nil: loopback.
	Network *pool.Network
	// GroupTokens are tokens other than Token, each placing its holder
	// in a group (LoadGroupTokens): token -> group.
	GroupTokens map[string]string
	// MaxLeasesPerGroup caps the leases one holder group holds at once
	// (0: no cap); one more request is answered 429 naming the cap.
	MaxLeasesPerGroup int
	groupMu           sync.Mutex
	groupPending      map[string]int
	// MaxSlotsPerGroup caps the slots a group token's requests may bring
	// a pool to, and the pools of the group's own templates to together
	// (0: twice MaxLeasesPerGroup, else DefaultMaxSlotsPerGroup;
	// tenants.go).
	MaxSlotsPerGroup int
	slotsMu          sync.Mutex
	upPending        map[string]pendingPool // by template name
	// Cache says which fleet caches template requests may name.
	Cache    Cache
	caches   caches
	waiters  atomic.Int64
	rejected atomic.Int64
	metrics  *metrics
	builds   builds
	logins   logins // one-time dashboard logins (login.go)

	state *state.Store

	mu    sync.Mutex
	pools map[string]*pool.Pool // by template name; nil while pool up reserves the name
	// poolsChanged is closed and replaced whenever pools changes
	// (setPool, dropPool), for lease requests waiting for a pool.
	poolsChanged chan struct{}
	quit         chan struct{}
	once         sync.Once
}

// New prepares a daemon for root. It takes the root's state file (one
// daemon per root), kills servers an earlier daemon left running, brings
// back the pools that daemon had, with their leases, and removes clones
// nobody owns. Templates are read from builder's catalog, and the
// builds clients drive themselves run through builder.
func New(ctx context.Context, root *rootdir.Root, builder *template.Builder, log *slog.Logger) (*Server, error) {
	st, err := state.Open(root.Path)
	if err != nil {
		return nil, err
	}
	if killed := mariadb.KillOrphans(root.Data()); len(killed) > 0 {
		log.Warn("killed servers left by an earlier daemon", "pids", killed)
	}
	s := &Server{root: root, cat: builder.Catalog(), builder: builder, log: log, state: st, pools: map[string]*pool.Pool{}, poolsChanged: make(chan struct{}), quit: make(chan struct{})}
	s.metrics = newMetrics(s)
	s.metrics.reg.MustRegister(s.waiterMetrics()...)
	s.builds = builds{sessions: map[string]*buildSession{}, failed: map[string]failedBuild{}, changed: make(chan struct{})}
	keep := s.restore(ctx)
	s.removeStalePools(keep)
	return s, nil
}

// restore brings back the pools recorded in the state file and returns
// their clone directories.
func (s *Server) restore(ctx context.Context) map[string]bool {
	keep := map[string]bool{}
	recs, err := s.state.Pools()
	if err != nil {
		s.log.Error("read state", "err", err)
		return keep
	}
	leases := map[string][]pool.Lease{}
	_ = s.state.Leases(func(raw []byte) error {
		var l pool.Lease
		if json.Unmarshal(raw, &l) == nil {
			leases[l.Template] = append(leases[l.Template], l)
		}
		return nil
	})
	restored := map[string]bool{}
	for _, rec := range recs {
		m, err := s.cat.Get(rec.Hash)
		if err != nil {
			s.log.Error("restore pool: template gone", "template", rec.Template, "err", err)
			s.losePool(rec.Template, leases[rec.Template], "its template is gone: "+err.Error())
			_ = s.state.DeletePool(rec.Template)
			continue
		}
		keep[pool.Dir(s.cat, m)] = true
		if len(leases[rec.Template]) == 0 {
			// No lease to restore: every clone is stale (a slot the daemon
			// was resetting, in place or not, among them) and the pool
			// comes back on fresh clones.
			s.removePoolDir(pool.Dir(s.cat, m))
		}
		p, err := pool.Up(ctx, s.cat, s.builder.Binary(), m, s.poolOptions(rec, leases[rec.Template]))
		if err != nil {
			s.log.Error("restore pool", "template", rec.Template, "err", err)
			s.losePool(rec.Template, leases[rec.Template], "its pool did not come back after a daemon restart: "+err.Error())
			_ = s.state.DeletePool(rec.Template)
			delete(keep, pool.Dir(s.cat, m))
			continue
		}
		restored[rec.Template] = true
		s.pools[m.Name] = p
		s.log.Info("restored pool", "template", m.Name, "size", rec.Size, "leases", len(p.Leases()))
	}
	// Leases of a pool with no record (a pool down that was cut short).
	for name, ls := range leases {
		if !restored[name] {
			s.losePool(name, ls, "its pool is no longer recorded")
		}
	}
	return keep
}

// losePool marks the leases of a pool that did not come back as lost.
func (s *Server) losePool(template string, leases []pool.Lease, detail string) {
	for _, l := range leases {
		rec := pool.LostLease{ID: l.ID, Template: template, Slot: l.Slot, Holder: l.Holder, Reason: pool.ReasonPoolGone, Detail: detail, At: time.Now().UTC()}
		if err := s.state.LoseLease(l.ID, rec); err != nil {
			s.log.Error("journal a lost lease", "lease", l.ID, "err", err)
		}
		s.metrics.event(pool.Event{Kind: pool.EventLeaseLost, Template: template, Slot: l.Slot, Lease: l.ID, Reason: pool.ReasonPoolGone, Detail: detail})
		s.log.Warn("lease lost", "template", template, "slot", l.Slot, "lease", l.ID, "reason", pool.ReasonPoolGone, "detail", detail)
	}
}

// poolOptions turns a pool record into pool options.
func (s *Server) poolOptions(rec state.Pool, restore []pool.Lease) pool.Options {
	prof := mariadb.DefaultProfile()
	if rec.BufferPool > 0 {
		prof.BufferPool = rec.BufferPool
	}
	return pool.Options{Size: rec.Size, Slots: rec.Slots, Profile: prof, Parallel: rec.Parallel, Journal: s.state, Restore: restore,
		Observe: s.metrics.observe, Log: s.log, Event: s.metrics.event, SlotDisk: max(rec.SlotDisk, 0),
		SlotMemory: max(rec.SlotMemory, 0), Network: s.Network, Spares: max(s.MaxSpares, 0), GrowForWait: s.growForWait}
}

// removeStalePools removes clone directories no live pool owns.
func (s *Server) removeStalePools(keep map[string]bool) {
	dir := filepath.Join(s.root.Data(), "pools")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		pdir := filepath.Join(dir, e.Name())
		if !keep[pdir] {
			s.removePoolDir(pdir)
		}
	}
}

// removePoolDir removes a pool's clones, its slots' seeds and its
// directory.
func (s *Server) removePoolDir(pdir string) {
	slots, _ := os.ReadDir(pdir)
	for _, sl := range slots {
		data := filepath.Join(pdir, sl.Name(), "data")
		if err := s.cat.Backend().Remove(data); err != nil {
			s.log.Warn("remove stale clone", "path", data, "err", err)
		}
	}
	seeds, _ := os.ReadDir(filepath.Join(pdir, ".seeds"))
	for _, sd := range seeds {
		if err := s.cat.Backend().Remove(filepath.Join(pdir, ".seeds", sd.Name())); err != nil {
			s.log.Warn("remove stale seed", "path", sd.Name(), "err", err)
		}
	}
	if err := s.root.Check(pdir); err == nil {
		os.RemoveAll(pdir)
	}
	s.log.Info("removed stale pool", "path", pdir)
}

// Listen opens the daemon's unix socket, refusing when another daemon
// answers on it and removing a stale one.
//
// The socket has mode 0600 from the moment it is reachable: it is bound in
// a private directory (0700), given its mode there and renamed into place.
// Binding at its path and chmod'ing after would leave a window in which,
// under umask 000, anyone could connect; setting the umask around the bind
// is no fix in Go, where the umask is the process's and other goroutines
// (and the runtime's threads) create files meanwhile.
func Listen(root *rootdir.Root) (net.Listener, error) {
	path := SocketPath(root)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("a pristine daemon already serves %s: use it, or stop it with `pristine pool down --all`", root.Path)
	}
	_ = os.Remove(path)
	private, err := os.MkdirTemp(root.Path, ".sock-")
	if err != nil {
		return nil, fmt.Errorf("listen on unix socket %s: %w", path, err)
	}
	defer os.RemoveAll(private)
	tmp := filepath.Join(private, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on unix socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if afterBind != nil {
		afterBind(tmp)
	}
	if err := os.Chmod(tmp, 0o600); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen on unix socket %s: %w", path, err)
	}
	return &unixListener{UnixListener: ln, path: path}, nil
}

// afterBind, when set (by a test), runs between the bind and the rename.
var afterBind func(tmp string)

// unixListener removes its socket when closed, as net.UnixListener does
// for the path it bound.
type unixListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { os.Remove(l.path) })
	return err
}

// Serve answers the API on the unix socket ln, and on tcp (when not nil)
// for holders of the token, until ctx ends, a shutdown request comes, or
// (with ExitWhenIdle) the last pool goes down. Every pool is brought down
// before it returns.
func (s *Server) Serve(ctx context.Context, ln, tcp net.Listener) error {
	defer s.stop()
	h := s.Handler()
	hs := s.httpServer(h)
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("serving", "socket", ln.Addr().String(), "backend", s.cat.Backend().Name(), "server", s.builder.Binary().Version)
	if err := mariadb.NoSyncError(); err != nil {
		s.log.Warn("the servers will make their fsyncs (slower on btrfs, most of all MySQL's): the kernel refused their seccomp filter", "err", err)
	}
	if tcp != nil {
		if s.Token == "" {
			return errors.New("serve on TCP: no token: every TCP client must present one")
		}
		ts := s.httpServer(s.requireToken(h))
		tcp, scheme := s.listenTCP(tcp)
		go func() { errc <- ts.Serve(tcp) }()
		defer ts.Close()
		total, per := s.connCaps()
		s.log.Info("serving", "tcp", tcp.Addr().String(), "dashboard", scheme+"://"+tcp.Addr().String()+"/", "max_connections", total, "max_connections_per_address", per)
	}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				s.expireBuilds()
				s.shrinkIdle(now)
			case <-s.quit:
				return
			}
		}
	}()
	if s.ExitWhenIdle {
		// A daemon started on demand that has nothing to serve goes away.
		go func() {
			time.Sleep(30 * time.Second)
			s.stopIfIdle()
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case <-s.quit:
	case err = <-errc:
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutCtx)
	s.abortBuilds()
	s.downAll()
	s.state.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) stop() { s.once.Do(func() { close(s.quit) }) }

func (s *Server) downAll() {
	s.mu.Lock()
	pools := s.pools
	s.pools = map[string]*pool.Pool{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for name, p := range pools {
		if p == nil {
			continue // not made yet: its pool up finds its name gone
		}
		wg.Add(1)
		go func(name string, p *pool.Pool) {
			defer wg.Done()
			if err := p.Down(context.Background()); err != nil {
				s.log.Error("pool down", "template", name, "err", err)
			}
			_ = s.state.DeletePool(name)
		}(name, p)
	}
	wg.Wait()
}

// pool finds a pool by template name; an empty name means the only pool.
// A pool whose pool up has not made it yet (the name reserved) answers
// errComingUp; once made, a pool is found while its slots start.
func (s *Server) pool(name string) (*pool.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.poolLocked(name)
}

// poolWait is pool, waiting until ctx ends while the pool's name is
// reserved by a pool up that has not made the pool yet.
func (s *Server) poolWait(ctx context.Context, name string) (*pool.Pool, error) {
	for {
		s.mu.Lock()
		p, err := s.poolLocked(name)
		changed := s.poolsChanged
		s.mu.Unlock()
		if !errors.Is(err, errComingUp) {
			return p, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, err
		}
	}
}

// setPool registers pool p under name and wakes lease requests waiting
// for it.
func (s *Server) setPool(name string, p *pool.Pool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pools[name] = p
	s.poolsChangedLocked()
}

// dropPool removes pool p (nil: a reservation) from under name, unless
// the name holds another pool by now.
func (s *Server) dropPool(name string, p *pool.Pool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.pools[name]; ok && cur == p {
		delete(s.pools, name)
		s.poolsChangedLocked()
	}
}

// poolsChangedLocked wakes the waiters of poolWait; the caller holds s.mu.
func (s *Server) poolsChangedLocked() {
	close(s.poolsChanged)
	s.poolsChanged = make(chan struct{})
}

// poolLocked is pool; the caller holds s.mu.
func (s *Server) poolLocked(name string) (*pool.Pool, error) {
	if name == "" {
		if len(s.pools) == 1 {
			for n := range s.pools {
				name = n
			}
		} else if len(s.pools) == 0 {
			return nil, fmt.Errorf("%w: no pool is up: run `pristine pool up --template NAME --size N`", errNoPool)
		} else {
			return nil, fmt.Errorf("%w: %d pools are up: name one with --template", errNoPool, len(s.pools))
		}
	}
	p, ok := s.pools[name]
	if !ok {
		return nil, fmt.Errorf("%w: no pool of template %q is up: run `pristine pool up --template %s --size N`", errNoPool, name, name)
	}
	if p == nil {
		return nil, fmt.Errorf("%w: the pool of %s is still coming up: try again in a moment", errComingUp, name)
	}
	return p, nil
}

var (
	errNoPool   = errors.New("no such pool")
	errComingUp = errors.New("pool coming up")
)

func (s *Server) poolNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.pools))
	for n := range s.pools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
