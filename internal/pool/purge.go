package pool

// InnoDB's purge after an in-place restore. Where a slot's write mark holds
// InnoDB's log sequence number (MariaDB: markSettles), the purge of the
// restore's undo logs, and of the old holder's, moves it after the
// restore's statements returned: a mark taken before the purge ran would
// make the next holder's release --unchanged reset a slot nobody wrote
// to. InnoDB wakes its purge once a second; the reset wakes it at once
// (purgeWaker) and waits the millisecond or two it takes (waitPurged)
// before it reads the mark. Where that wait runs out, the slot is handed
// out anyway and settleMark retakes the mark in the background, unless
// the slot was leased meanwhile. Neither runs in a pool whose holders
// release dirty (marksRead): nothing reads their marks.

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
)

// wakeTimeout bounds one wake (the statement bounds itself:
// mariadb.Changes.PurgeWake).
const wakeTimeout = 3 * time.Second

// maxWakes is how many wakes run at once on one server, and so how many
// connections the waker holds at most: one kept open between wakes, and
// one more for a reset that comes within a wake's 100 ms; adminReserve
// counts them.
const maxWakes = 2

// purgeWaker runs the flavour's purge wake (mariadb.Changes.PurgeWake) on
// connections of its own to one slot's server, and names them (spared),
// so that killing the old holder's connections (killOthers) leaves them:
// a wake stays on the server for 100 ms after the purge it woke is done,
// and waiting for it to end would hold up the next release by as much.
// One connection stays open between wakes, so a wake costs no login.
type purgeWaker struct {
	stmt string
	open func() (*sql.DB, error)

	mu     sync.Mutex
	db     *sql.DB   // opened at the first wake
	idle   *wakeConn // the connection kept between wakes
	n      int       // connections held or being opened
	held   []int64   // the ids of the connections held
	closed bool
}

// wakeConn is one of the waker's connections and the server's id of it.
type wakeConn struct {
	conn *sql.Conn
	id   int64
}

// newPurgeWaker is the waker of a server of flavour f; open opens an
// administrator's pool to it.
func newPurgeWaker(f mariadb.Flavor, open func() (*sql.DB, error)) *purgeWaker {
	return &purgeWaker{stmt: f.Changes().PurgeWake, open: open}
}

// wake starts a purge wake in the background; it reports false when the
// flavour has none, the waker is closed or maxWakes run already.
func (w *purgeWaker) wake() bool {
	if w == nil || w.stmt == "" {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || (w.idle == nil && w.n >= maxWakes) {
		return false
	}
	if w.db == nil {
		db, err := w.open()
		if err != nil {
			return false
		}
		db.SetMaxIdleConns(0) // the waker keeps its connections itself
		w.db = db
	}
	c := w.idle
	if c == nil {
		w.n++
	}
	w.idle = nil
	go w.run(w.db, c)
	return true
}

// run is one wake, on c or, when nil or gone, a new connection of db.
func (w *purgeWaker) run(db *sql.DB, c *wakeConn) {
	ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
	defer cancel()
	var err error
	if c != nil {
		if _, err = c.conn.ExecContext(ctx, w.stmt); err != nil {
			// The kept connection went (the server's wait_timeout, a
			// KILL): once more on a new one.
			w.forget(c)
			c = nil
		}
	}
	if c == nil {
		if c, err = w.connect(ctx, db); err == nil {
			_, err = c.conn.ExecContext(ctx, w.stmt)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil && !w.closed && w.idle == nil {
		w.idle = c
		return
	}
	w.n--
	if c != nil {
		w.held = slices.DeleteFunc(w.held, func(id int64) bool { return id == c.id })
		c.conn.Close()
	}
}

// forget closes connection c, which the connection replacing it stands
// for in the count.
func (w *purgeWaker) forget(c *wakeConn) {
	w.mu.Lock()
	w.held = slices.DeleteFunc(w.held, func(id int64) bool { return id == c.id })
	w.mu.Unlock()
	c.conn.Close()
}

// connect opens one of the waker's connections and names it.
func (w *purgeWaker) connect(ctx context.Context, db *sql.DB) (*wakeConn, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	id, err := mariadb.ConnectionID(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c := &wakeConn{conn: conn, id: id}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = append(w.held, c.id)
	return c, nil
}

// spared lists the connections the waker holds.
func (w *purgeWaker) spared() []int64 {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.held)
}

// close closes the waker's connections; a wake running ends with the
// server.
func (w *purgeWaker) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.idle != nil {
		w.idle.conn.Close()
		w.idle = nil
	}
	if w.db != nil {
		w.db.Close()
	}
}

// The in-place reset's wait for a woken purge before the mark is read:
// rounds of purgeEvery, at most purgeRounds (about 40 ms with the
// queries). A woken purge of a restore is done in one to two
// milliseconds.
const (
	purgeRounds = 60
	purgeEvery  = 500 * time.Microsecond
)

// marksWindow is how many leases back a release --unchanged makes the
// in-place reset wait for the purge (marksRead).
const marksWindow = 64

// marksRead reports whether a release --unchanged was checked in the
// last marksWindow leases: only that check reads a slot's write mark, so
// in a pool whose holders release dirty the in-place reset does not wait
// for the purge before it reads one (a wait of 1-2 ms a reset, and a
// purge run for each, where InnoDB's own once a second runs one for
// many). The caller holds p.mu.
func (p *Pool) marksRead() bool {
	return p.checked > 0 && p.stats.Leases+1-p.checked < marksWindow
}

// settleRounds and settleEvery bound settleMark's wait: 100 rounds of
// 10 ms.
const (
	settleRounds = 100
	settleEvery  = 10 * time.Millisecond
)

// waitPurged polls q's server until InnoDB's history list is empty (the
// purge is done), at most rounds rounds of every, one status read each,
// and then, if hold, until the log sequence number held still for one
// more round; it reports whether it did. Each round waits first. still,
// when not nil, is asked after each wait: false stops the poll (not
// settled). Without hold, a mark read right after can miss the purge's
// last write (the history list's length is taken down just before the
// write that removes the log): a release --unchanged then resets the
// slot, which is safe, only slower.
func waitPurged(ctx context.Context, q querier, f mariadb.Flavor, rounds int, every time.Duration, hold bool, still func() bool) (bool, error) {
	hist, lsn := f.Changes().HistoryStatus, f.LSNStatus()
	if hist == "" {
		return false, nil
	}
	filter := "WHERE Variable_name IN (" + quote.String(hist) + ", " + quote.String(lsn) + ")"
	last := ""
	for i := 0; i < rounds; i++ {
		time.Sleep(every)
		if still != nil && !still() {
			return false, nil
		}
		status, err := mariadb.ReadStatus(ctx, q, "GLOBAL", filter)
		if err != nil {
			return false, err
		}
		switch {
		case status[hist] != "0":
			last = ""
		case !hold || status[lsn] == last:
			return true, nil
		default:
			last = status[lsn]
		}
	}
	return false, nil
}

// settleMark retakes a ready slot's write mark once InnoDB settled, when
// the in-place reset's own wait (waitPurged) ran out: the purge lags
// under load. The slot is handed out meanwhile: keeping it Resetting
// until InnoDB settled took a soak from 27 to 4 leases per second, when
// the purge was not woken. The mark is replaced only if the slot did not
// move since it became ready at generation gen: no lease was handed out,
// so no holder wrote between the read and the check. Otherwise the older
// mark stays: a release --unchanged then resets the slot, which is safe,
// only slower.
func (p *Pool) settleMark(s *slot, gen uint64, srv *liveServer, globals string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*settleRounds*settleEvery)
	defer cancel()
	still := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return s.gen == gen && !p.closed
	}
	f := srv.Binary.Flavor
	if ok, err := waitPurged(ctx, srv.admin, f, settleRounds, settleEvery, true, still); err != nil || !ok {
		return
	}
	status, err := mariadb.ReadStatus(ctx, srv.admin, "GLOBAL", statusCounters[f])
	if err != nil {
		return
	}
	counters, err := sumWrites(status, f)
	if err != nil {
		return
	}
	mark := strconv.FormatUint(counters, 10) + " " + globals
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.gen == gen && !p.closed && s.state == Ready && s.srv == srv {
		s.mark = mark
	}
}
