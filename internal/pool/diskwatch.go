package pool

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/units"
)

// The disk cap of a slot (Options.SlotDisk) has two parts.
//
// The soft cap is watched by pristine: about four times a second it adds
// up the blocks of every leased slot's clone, and when a slot has written
// more than SlotDisk since it became ready, its holder's running
// statements are stopped (KILL QUERY, which rolls them back) and the
// server is made read-only (SET GLOBAL read_only=ON: lease accounts cannot
// undo it), so the holder's next writes fail with ER_OPTION_PREVENTS_
// STATEMENT. The slot is reset when the lease is released; other slots
// never notice.
//
// The hard cap is the filesystem's (btrfs qgroup, XFS project quota), at
// SlotDisk plus hardHeadroom: writes past it fail with EDQUOT. It stops a
// burst faster than the watch. InnoDB answers a failed extension with
// "The table is full", but it aborts when it cannot write its log or roll
// a statement back, so the headroom leaves room for the rollback the soft
// cap starts; a slot that still dies on it is reported with reason
// disk_full, its lease lost, and it is reset.

// hardHeadroom is how far past the soft cap the filesystem's cap lies.
func hardHeadroom(soft int64) int64 { return max(soft/2, 256<<20) }

// diskWatchEvery is how often leased slots' disk use is added up, at most:
// a pass that took d waits at least 9d before the next, so the watch takes
// no more than a tenth of a core however many slots are leased (the hard
// cap stops what a slower watch misses).
const diskWatchEvery = 250 * time.Millisecond

// usedBlocks adds up the bytes allocated to the files under dir (shared
// copy-on-write extents count in full, so callers subtract the sum taken
// when the slot became ready).
func usedBlocks(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) == nil {
			n += st.Blocks << 9
		}
		return nil
	})
	return n
}

// diskWatch enforces the soft cap on leased slots.
func (p *Pool) diskWatch() {
	defer p.wg.Done()
	var pass time.Duration
	for {
		select {
		case <-time.After(max(diskWatchEvery, 9*pass)):
		case <-p.stop:
			return
		}
		start := time.Now()
		if !p.checkDisk() {
			return
		}
		pass = time.Since(start)
	}
}

// checkDisk is one pass of the disk watch: it freezes every leased slot
// over its cap. A slot that moved on while its disk was added up is left
// alone. It returns false once the pool is closed.
func (p *Pool) checkDisk() bool {
	type watched struct {
		s     *slot
		gen   uint64
		base  int64
		srv   server
		users []string
	}
	var todo []watched
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	for _, s := range p.slots {
		if (s.state == Leased || s.state == Kept) && !s.overCap && s.srv != nil {
			w := watched{s: s, gen: s.gen, base: s.baseBlocks, srv: s.srv}
			for i := range s.units {
				w.users = append(w.users, s.units[i].acct.user)
			}
			todo = append(todo, w)
		}
	}
	p.mu.Unlock()
	for _, w := range todo {
		used := p.ops.diskUsed(filepath.Join(w.s.dir, "data")) - w.base
		if used <= p.opt.SlotDisk {
			continue
		}
		p.mu.Lock()
		if w.s.gen != w.gen || p.closed {
			p.mu.Unlock()
			continue
		}
		w.s.overCap = true
		w.s.err = fmt.Sprintf("wrote %s, over its disk cap of %s: read-only until its lease is released", units.Bytes(used), units.Bytes(p.opt.SlotDisk))
		p.log.Warn("slot over its disk cap: its statements are stopped and it is read-only until released",
			"template", p.Meta.Name, "slot", w.s.idx, "written", used, "cap", p.opt.SlotDisk)
		p.stats.OverCap++
		p.mu.Unlock()
		if err := w.srv.freeze(context.Background(), w.users); err != nil {
			p.log.Error("make a slot over its disk cap read-only", "slot", w.s.idx, "err", err)
		}
	}
	return true
}

// killQueries stops the running statements of user's connections; the
// connections stay.
func killQueries(ctx context.Context, admin *sql.DB, user string) error {
	rows, err := admin.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND <> 'Sleep'", user)
	if err != nil {
		return fmt.Errorf("list lease connections: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	rows.Close()
	for _, id := range ids {
		_, _ = admin.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id))
	}
	return nil
}
