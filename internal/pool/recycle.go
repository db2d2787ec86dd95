package pool

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// check is what release --unchanged compares: the server's write
// counters and global variables, and the slot's files.
type check struct {
	mark  string
	files fileMark
	base  *inplaceBase // the in-place reset's baseline, retaken (inplace.go)
}

// errChanged says why a database released as unchanged is reset.
var errChanged = errors.New("changed")

// movedError is the error of a check that found the server's write
// counters or global variables moved: it carries what the check already
// did of the in-place reset's first steps (its srv is the caller's to
// set).
type movedError struct{ handed handedOver }

func (e *movedError) Error() string {
	return errChanged.Error() + ": the server's write counters or global variables moved"
}

func (e *movedError) Unwrap() error { return errChanged }

// handedOver is what a release --unchanged check that found the database
// written leaves to the in-place reset that follows (inplaceJob.pre): the
// lease account handed on with a new password, every other connection
// killed and gone, no XA transaction left, and the server's counters read
// after that, on server srv. The check's ALTER USER is in the slot's
// baseline already. Until the reset, nobody can log in but pristine (the
// new password is its alone), so the reset starts from there: it does not
// hand the account on, kill or read the counters again.
type handedOver struct {
	srv    server
	acct   account           // the lease account, with the check's new password
	status map[string]string // the server's counters, read after the kill
}

// querier is what the admin queries run on: the admin pool (*sql.DB) or
// one of its connections (*sql.Conn).
type querier = mariadb.Querier

// recycle ends a lease's account and, when neither the server's write
// counters and global variables nor the slot's files changed since the
// slot was ready, hands the account on to the next holder with a new
// password (rekeyAccount). An error (or a zero account) means the
// database must be reset; errChanged says what moved.
//
// The old holder must keep nothing: first its account gets a new
// password, so no handshake that completes from here on is let in with
// one the holder knows; then every connection
// but the one running these statements is killed (by connection id: a
// session inside a routine whose definer is root shows USER=root, and a
// session still in its handshake shows no user yet), until the process
// list holds that connection alone; a connection that does not go within
// the bound resets the slot. An XA transaction left behind (prepared, it
// outlives its connection) resets the slot too.
func recycle(ctx context.Context, admin *sql.DB, g *serverGlobals, f mariadb.Flavor, was check, a account, dirs []string, spare []int64) (account, check, error) {
	conn, err := admin.Conn(ctx)
	if err != nil {
		return account{}, check{}, fmt.Errorf("admin connection: %w", err)
	}
	defer conn.Close()
	// The new password writes the grant tables: this connection's own
	// moves of the write counters, from here to the read of the server's,
	// are taken off the mark.
	before, err := sessionCounters(ctx, conn, f)
	if err != nil {
		return account{}, check{}, err
	}
	fresh, err := rekeyAccount(ctx, conn, a)
	if err != nil {
		return account{}, check{}, err
	}
	if was.base != nil {
		// If this check fails, the slot goes to the in-place reset, whose
		// baseline must not take this statement for the holder's.
		was.base.other++
	}
	if err := killOthers(ctx, conn, spare...); err != nil {
		return account{}, check{}, err
	}
	if n, err := xaPending(ctx, conn); err != nil {
		return account{}, check{}, err
	} else if n > 0 {
		return account{}, check{}, fmt.Errorf("%w: %d XA transaction(s) outlived their connections", errChanged, n)
	}
	status, counters, err := readCounters(ctx, conn, f)
	if err != nil {
		return account{}, check{}, err
	}
	// Read next to the server's counters: what this connection moved
	// since before is in both, and nothing else writes (the old holder is
	// gone and locked out).
	pre, err := sessionCounters(ctx, conn, f)
	if err != nil {
		return account{}, check{}, err
	}
	own, err := ownMoves(before, pre, f)
	if err != nil {
		return account{}, check{}, err
	}
	// The global variables are hashed again only when a SET statement ran
	// since the base (as in the in-place reset: most holders run none).
	globals := markGlobals(was.mark)
	if was.base == nil || was.base.sets < 0 || setCount(status) != was.base.sets {
		if globals, err = g.hash(ctx, conn, dirs); err != nil {
			return account{}, check{}, err
		}
	}
	mark, err := lessCounters(counters+" "+globals, own)
	if err != nil {
		return account{}, check{}, err
	}
	if mark != was.mark {
		return account{}, check{}, &movedError{handedOver{acct: fresh, status: status}}
	}
	files, err := was.files.remark(dirs...)
	if err != nil {
		return account{}, check{}, err
	}
	if d := was.files.diff(files, 5); len(d) > 0 {
		return account{}, check{}, fmt.Errorf("%w: files changed: %s", errChanged, strings.Join(d, ", "))
	}
	// The files are as they were (diff found nothing), and this look at
	// them finds more of their directories settled (remark).
	now := check{files: files, mark: withCounters(mark, counters)}
	if now.base, err = baseFrom(ctx, conn, f, was.base, status, globals); err != nil {
		return account{}, check{}, err
	}
	return fresh, now, nil
}

// killRounds bounds killOthers: 400 rounds of at least 5 ms, about 2 s
// on an idle server, for every killed connection to leave the process
// list. (A variable for the test of a connection that outlasts them.)
var killRounds = 400

// killOthers kills every client connection of the server but conn's own
// and spare (the daemon's purge wakes: purgeWaker) and returns once the
// process list shows none (mariadb.KillOthers). Past killRounds it fails,
// and the caller resets the slot.
func killOthers(ctx context.Context, conn *sql.Conn, spare ...int64) error {
	if err := mariadb.KillOthers(ctx, conn, killRounds, spare...); err != nil {
		return fmt.Errorf("the old holder's connections: %w", err)
	}
	return nil
}

// xaPending counts the XA transactions XA RECOVER shows: a prepared one
// outlives its connection and would be the next holder's to commit or
// see.
func xaPending(ctx context.Context, conn querier) (int, error) {
	rows, err := conn.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return 0, fmt.Errorf("list XA transactions: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("list XA transactions: %w", err)
	}
	return n, nil
}

// ownMoves is how far a connection's write counters (accountCounters) moved
// from its reads pre to post. It is taken off the server's, so a counter
// left out can only make an unchanged database look changed (it is
// reset), never hide a write.
func ownMoves(pre, post map[string]string, f mariadb.Flavor) (int64, error) {
	a, err := sumWrites(pre, f)
	if err != nil {
		return 0, err
	}
	b, err := sumWrites(post, f)
	if err != nil {
		return 0, err
	}
	if b < a {
		return 0, fmt.Errorf("read write counters: the session's went back, from %d to %d", a, b)
	}
	return int64(b - a), nil
}

// sessionCounters reads, for the connection conn, the write counters an
// account statement can move (accountCounters).
func sessionCounters(ctx context.Context, conn querier, f mariadb.Flavor) (map[string]string, error) {
	status, err := mariadb.ReadStatus(ctx, conn, "SESSION", accountCounters[f])
	if err != nil {
		return nil, fmt.Errorf("read the admin session's write counters: %w", err)
	}
	return status, nil
}

// lessCounters is mark with d taken off its write counters.
func lessCounters(mark string, d int64) (string, error) {
	counters, _, _ := strings.Cut(mark, " ")
	n, err := strconv.ParseInt(counters, 10, 64)
	if err != nil {
		return "", fmt.Errorf("read write counters: %q is not a number", counters)
	}
	return withCounters(mark, strconv.FormatInt(n-d, 10)), nil
}

// ReleaseMode says what the holder did with a lease.
type ReleaseMode int

// The release modes.
const (
	// Dirty: the database may have been written; reset before reuse.
	Dirty ReleaseMode = iota
	// Unchanged: the holder says it wrote nothing. pristine checks the
	// server's write counters and, when they did not move, hands the
	// database out again at once; otherwise it resets it.
	Unchanged
)

// Release returns a lease. A dirty (or kept, or unverifiable) database is
// reset in the background; an unchanged one is checked before Release
// returns, and handed out again at once when nothing was written. It
// reports whether the database will be reset.
func (p *Pool) Release(ctx context.Context, id string, mode ReleaseMode) (reset bool, err error) {
	c, err := p.beginRelease(id, mode, false)
	if err != nil {
		return false, err
	}
	if c == nil {
		return true, nil
	}
	return p.finishCheck(ctx, c)
}

// ReleaseAsync returns a lease without waiting for release --unchanged's
// check: the lease is ended (gone from the pool and the journal, its
// database neither leasable nor reset) before it returns, and the check
// runs in the background (checking is true), after which the database is
// handed out again or reset, as Release does. The holder's connections
// are killed by the check, or by the reset, before the slot is handed out
// again. Down cancels a check still running; the slot then goes with the
// pool. Whether the check reused the database is counted in
// Stats.Reused.
func (p *Pool) ReleaseAsync(id string, mode ReleaseMode) (checking bool, err error) {
	c, err := p.beginRelease(id, mode, true)
	if err != nil || c == nil {
		return false, err
	}
	go func() {
		defer p.wg.Done()
		ctx, cancel := p.stopContext()
		defer cancel()
		if checkHook != nil {
			checkHook(ctx, c.s.idx)
		}
		_, _ = p.finishCheck(ctx, c)
	}()
	return true, nil
}

// checkHook, when set (tests), is called at the start of every check
// ReleaseAsync runs in the background, with the check's context (ended by
// Down): the window in which the release has answered and the slot is
// still being checked.
var checkHook func(ctx context.Context, slot int)

// pendingCheck is a release --unchanged whose lease is ended and whose
// check is to run: what the check compares, taken under p.mu.
type pendingCheck struct {
	id   string
	s    *slot
	u    *unit
	srv  server
	acct account
	was  check
	gen  uint64
	dirs []string
}

// beginRelease ends lease id. A release that needs no check (dirty, kept,
// several databases, restored) queues the reset and returns nil; an
// unchanged one marks its unit checking (not leasable, not reset) and
// returns the check to run. With async, the caller's goroutine is counted
// in p.wg (under p.mu, the pool open: Down waits for it).
func (p *Pool) beginRelease(id string, mode ReleaseMode, async bool) (*pendingCheck, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.leases[id]
	if !ok {
		if err := p.lostErr(id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w %q: it was released already, or belongs to another pool (see `pristine pool status`)", ErrUnknownLease, id)
	}
	s := p.slots[l.Slot]
	// Only a slot with one database can be checked: with several, the
	// server's counters mix the writes of several holders.
	// Nor can a lease restored after a daemon restart: the marks were
	// taken after its holder's writes.
	if mode == Dirty || l.Kept || len(s.units) > 1 || l.restored || (async && p.closed) {
		p.releaseLocked(l)
		return nil, nil
	}
	p.forget(l)
	p.checked = p.stats.Leases + 1
	u := &s.units[0]
	u.lease, u.checking = nil, true
	if async {
		p.wg.Add(1)
	}
	return &pendingCheck{id: id, s: s, u: u, srv: s.srv, acct: u.acct, gen: s.gen, dirs: slotDirs(s),
		was: check{mark: s.mark, files: s.files, base: s.inplace}}, nil
}

// finishCheck runs release --unchanged's check c and applies its result:
// the database is handed out again, or reset. It reports whether the
// database will be reset.
func (p *Pool) finishCheck(ctx context.Context, c *pendingCheck) (reset bool, err error) {
	fresh, now, err := c.srv.recycle(ctx, c.was, c.acct, c.dirs)
	p.mu.Lock()
	defer p.mu.Unlock()
	s, u := c.s, c.u
	u.checking = false
	if s.gen != c.gen || p.closed {
		return true, nil // the slot died or the pool went down meanwhile: the check's result is dropped
	}
	if err != nil || !fresh.ok() {
		if err != nil {
			p.log.Info("release unchanged: resetting", "template", p.Meta.Name, "slot", s.idx, "lease", c.id, "why", err.Error())
		}
		if moved := (*movedError)(nil); errors.As(err, &moved) {
			h := moved.handed
			h.srv = c.srv
			s.handed = &h
		}
		p.resetIfDone(s)
		return true, nil
	}
	u.acct, u.spent, s.mark, s.files, s.inplace = fresh, false, now.mark, now.files, now.base
	p.stats.Reused++
	if s.active() == 0 {
		if err := p.move(s, Ready, "released unchanged"); err != nil {
			return false, err
		}
	}
	p.signal()
	return false, nil
}

// releaseLocked ends a lease whose database will be reset.
func (p *Pool) releaseLocked(l *Lease) {
	p.forget(l)
	s := p.slots[l.Slot]
	for i := range s.units {
		if s.units[i].lease == l {
			s.units[i].lease = nil
		}
	}
	p.resetIfDone(s)
}
