package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// ErrForkBusy is returned (wrapped) when a lease's slot is not in a state
// a fork can copy (its server is being replaced) or moved on during the
// copy (the lease ended).
var ErrForkBusy = errors.New("lease cannot be forked now")

// ErrForkShared is returned (wrapped) for a lease of a slot that serves
// several databases (--dbs-per-slot): the copy would hold the others'.
var ErrForkShared = errors.New("lease shares its slot")

// freezeMu makes one fork's pause of a server end before another's
// begins: a second SIGCONT must not resume a server a copy still needs
// stopped.
var freezeMu sync.Mutex

// Snapshot places a crash-consistent copy of lease id's data directory
// at dst (which must not exist), for a fork (template.Builder.Fork),
// without ending the lease or breaking its connections: it holds
// everything committed before Snapshot was called.
//
// A commit is in the operating system's page cache when it returns
// (innodb_flush_log_at_trx_commit=2, the slot profile; a slot that runs
// with 0 has its redo log written out first with FLUSH ENGINE LOGS).
// The slot's server is then stopped (SIGSTOP, every thread seen stopped,
// so no write is half-way) while its clone is copied: a btrfs snapshot,
// one ioctl whose cost does not depend on the data; a reflink or plain
// copy walks the files. SIGCONT resumes it: its clients only wait.
func (p *Pool) Snapshot(ctx context.Context, id, dst string) error {
	s, srv, imported, err := p.forkable(id)
	if err != nil {
		return err
	}
	if err := flushRedo(ctx, srv); err != nil {
		return fmt.Errorf("fork lease %s: %w", id, err)
	}
	if imported {
		if err := flushPages(ctx, srv); err != nil {
			return fmt.Errorf("fork lease %s: %w", id, err)
		}
	}
	src := filepath.Join(s.dir, "data")
	copyData := func() error { return p.backend.Clone(src, dst) }
	if live, ok := srv.(*liveServer); ok {
		err = frozen(live.Instance, copyData)
	} else {
		err = copyData() // the state machine's fake runs no process
	}
	if err != nil {
		return fmt.Errorf("fork lease %s: %w", id, err)
	}
	p.mu.Lock()
	l, held := p.leases[id]
	moved := !held || l.Slot != s.idx || s.srv != srv
	p.mu.Unlock()
	if moved {
		_ = p.backend.Remove(dst)
		return fmt.Errorf("%w: lease %s ended or its slot was reset during the fork: fork a lease you hold", ErrForkBusy, id)
	}
	return nil
}

// forkable finds lease id's slot and its server, and whether that server
// imported tablespaces in an in-place reset (slot.imported).
func (p *Pool) forkable(id string) (*slot, server, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.leases[id]
	if !ok {
		if err := p.lostErr(id); err != nil {
			return nil, nil, false, err
		}
		return nil, nil, false, fmt.Errorf("%w %q", ErrUnknownLease, id)
	}
	s := p.slots[l.Slot]
	if len(s.units) > 1 {
		return nil, nil, false, fmt.Errorf("%w: lease %s is one of %d databases of its slot (--dbs-per-slot %d), which other holders use: fork a lease of a pool with one database per slot", ErrForkShared, id, len(s.units), len(s.units))
	}
	if (s.state != Leased && s.state != Kept) || s.srv == nil || !s.srv.Running() {
		return nil, nil, false, fmt.Errorf("%w: lease %s's slot is %s: try again once it is leased", ErrForkBusy, id, s.state)
	}
	return s, s.srv, s.imported != nil && s.imported == s.srv, nil
}

// flushPagesWait bounds flushPages' wait for InnoDB's dirty pages.
const flushPagesWait = 60 * time.Second

// flushPages has InnoDB write every dirty page out before the copy, on a
// server that imported tablespaces (an in-place reset's DISCARD and
// IMPORT TABLESPACE): crash recovery does not apply the redo log to a
// tablespace imported since the last clean start, so the fork's
// recovering server would give that table's pages as the import left
// them, without the lease's committed writes (TestForkAfterInPlaceReset).
// Written out, the pages hold them. innodb_max_dirty_pages_pct is 0
// until no page is dirty, then back to what it was. The cost follows
// what the lease wrote since the page cleaner last ran, not the data.
func flushPages(ctx context.Context, srv server) error {
	live, ok := srv.(*liveServer)
	if !ok {
		return nil // the state machine's fake
	}
	var pct float64
	if err := live.admin.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct").Scan(&pct); err != nil {
		return fmt.Errorf("read innodb_max_dirty_pages_pct: %w", err)
	}
	if _, err := live.admin.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		return fmt.Errorf("write InnoDB's dirty pages out: %w", err)
	}
	defer live.admin.ExecContext(context.WithoutCancel(ctx), "SET GLOBAL innodb_max_dirty_pages_pct = "+strconv.FormatFloat(pct, 'f', -1, 64))
	deadline := time.Now().Add(flushPagesWait)
	for {
		var name string
		var dirty int64
		if err := live.admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &dirty); err != nil {
			return fmt.Errorf("count InnoDB's dirty pages: %w", err)
		}
		if dirty == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: the slot's server still has %d dirty pages after %s of writing them out (it imported tablespaces in an in-place reset, whose pages the fork must hold): fork again once the holder writes less", ErrForkBusy, dirty, flushPagesWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// flushRedo writes the redo log out when the server defers it
// (innodb_flush_log_at_trx_commit=0): then every committed transaction
// is in the page cache the copy sees.
func flushRedo(ctx context.Context, srv server) error {
	live, ok := srv.(*liveServer)
	if !ok {
		return nil // the state machine's fake
	}
	var v int
	if err := live.admin.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit").Scan(&v); err != nil {
		return fmt.Errorf("read innodb_flush_log_at_trx_commit: %w", err)
	}
	if v != 0 {
		return nil
	}
	if _, err := live.admin.ExecContext(ctx, "FLUSH ENGINE LOGS"); err != nil {
		return fmt.Errorf("write the redo log out: %w", err)
	}
	return nil
}

// frozen runs fn (the copy) while the server is stopped: SIGSTOP, then
// wait until every thread is stopped (a thread inside a write finishes it
// first), fn, SIGCONT. The server is resumed whatever happens. The
// signals go through the process handle, never to a pid another process
// may have taken.
func frozen(in *mariadb.Instance, fn func() error) error {
	freezeMu.Lock()
	defer freezeMu.Unlock()
	if err := in.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause the slot's server: %w", err)
	}
	defer in.Signal(syscall.SIGCONT)
	if err := waitStopped(in.PID(), 5*time.Second); err != nil {
		return err
	}
	return fn()
}

// waitStopped waits until every thread of pid is stopped (state T in
// /proc/PID/task/*/stat).
func waitStopped(pid int, limit time.Duration) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	deadline := time.Now().Add(limit)
	for {
		running, err := runningThreads(dir)
		if err != nil {
			return fmt.Errorf("pause the slot's server: %w", err)
		}
		if running == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pause the slot's server: %d threads did not stop within %s (a write stuck in the kernel?): try again", running, limit)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// runningThreads counts the threads under dir (/proc/PID/task) that are
// not stopped.
func runningThreads(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		// pid (comm) S ...: comm may hold spaces and parentheses.
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 || i+2 >= len(st) {
			continue
		}
		if c := st[i+2]; c != 'T' && c != 't' && c != 'Z' && c != 'X' {
			n++
		}
	}
	return n, nil
}
