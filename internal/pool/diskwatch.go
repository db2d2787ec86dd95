package pool

import (
	"context"
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
// over its cap, and stops the sessions of a frozen slot that still grows
// (read_only does not stop temporary tables, which live in the slot's
// tmpdir inside its clone; they die with their connection). A slot that
// moved on while its disk was added up is left alone. It returns false
// once the pool is closed.
func (p *Pool) checkDisk() bool {
	type watched struct {
		s        *slot
		gen      uint64
		base     int64
		srv      server
		frozen   bool
		frozenAt int64
	}
	var todo []watched
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	for _, s := range p.slots {
		if (s.state == Leased || s.state == Kept) && s.srv != nil {
			todo = append(todo, watched{s: s, gen: s.gen, base: s.baseBlocks, srv: s.srv, frozen: s.overCap, frozenAt: s.frozenAt})
		}
	}
	p.mu.Unlock()
	for _, w := range todo {
		used := p.ops.diskUsed(filepath.Join(w.s.dir, "data")) - w.base
		if w.frozen {
			// Still growing past its freeze: something read_only does
			// not stop, such as a temporary table.
			if used <= w.frozenAt+growthSlack(p.opt.SlotDisk) {
				continue
			}
			p.mu.Lock()
			if w.s.gen != w.gen || p.closed {
				p.mu.Unlock()
				continue
			}
			w.s.frozenAt = used
			p.stats.CapKills++
			p.log.Warn("slot over its disk cap still grows: its connections are killed",
				"template", p.Meta.Name, "slot", w.s.idx, "written", used, "cap", p.opt.SlotDisk)
			p.mu.Unlock()
			if err := w.srv.stopSessions(context.Background()); err != nil {
				p.log.Error("kill the connections of a slot over its disk cap", "slot", w.s.idx, "err", err)
			}
			continue
		}
		if used <= p.opt.SlotDisk {
			continue
		}
		p.mu.Lock()
		if w.s.gen != w.gen || p.closed {
			p.mu.Unlock()
			continue
		}
		w.s.overCap, w.s.frozenAt = true, used
		w.s.err = fmt.Sprintf("wrote %s, over its disk cap of %s: read-only until its lease is released", units.Bytes(used), units.Bytes(p.opt.SlotDisk))
		p.log.Warn("slot over its disk cap: its statements are stopped and it is read-only until released",
			"template", p.Meta.Name, "slot", w.s.idx, "written", used, "cap", p.opt.SlotDisk)
		p.stats.OverCap++
		p.mu.Unlock()
		if err := w.srv.freeze(context.Background()); err != nil {
			p.log.Error("make a slot over its disk cap read-only", "slot", w.s.idx, "err", err)
		}
	}
	return true
}

// growthSlack is how much a frozen slot may still grow before its
// connections are killed: what a stopped statement's rollback and the
// server's background work write.
func growthSlack(capBytes int64) int64 { return max(capBytes/8, 16<<20) }
