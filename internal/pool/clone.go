package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/svcuser"
	"github.com/pristinedb/pristine/internal/units"
)

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
	src, err := p.seed(s, sid, s.cloned)
	if err != nil {
		return fmt.Errorf("slot %d: %w", s.idx, err)
	}
	var own *cow.Owner // a seed is the id's already
	if src == p.cat.DataDir(p.Meta.Hash) {
		own = p.templateOwner(sid)
	}
	if err := cow.CloneAs(p.backend, src, data, own); err != nil {
		return fmt.Errorf("slot %d: clone template: %w", s.idx, err)
	}
	s.cloned = true
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

// claimIDs claims the server ids of the slots that have none, in one pass
// (svcuser.ClaimAll) rather than one claim per slot, each of which reads
// every record. When the pass fails, each slot claims its own at its
// clone (slotID), which fails that slot with the cause.
func (p *Pool) claimIDs(slots []*slot) {
	p.mu.Lock()
	var need []*slot
	var paths []string
	for _, s := range slots {
		if s.id == nil {
			need = append(need, s)
			paths = append(paths, filepath.Join(s.dir, "data"))
		}
	}
	p.mu.Unlock()
	if len(need) < 2 {
		return
	}
	ids, err := svcuser.ClaimAll(paths)
	if err != nil {
		p.log.Warn("the slots' server ids were not claimed at once; each slot claims its own", "template", p.Meta.Name, "error", err.Error())
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var extra []*svcuser.Claimed
	for i, s := range need {
		if s.id == nil {
			s.id = ids[i]
		} else {
			extra = append(extra, ids[i])
		}
	}
	svcuser.ReleaseAll(extra)
}

// seedsDir holds the slots' seeds (see seed): root's, 0700, so no server
// can reach the seed its own id owns.
const seedsDir = ".seeds"

// seed returns what slot s's clone is made from. On btrfs, where a
// snapshot keeps its source's owners and chowning each fresh snapshot
// costs a metadata copy of the template (measured: a clone and removal of
// the demo template 10 ms plain, 40-80 ms chowned), a slot that is
// cloned again (a full reset) has a seed: a snapshot of the template
// given to the slot's id once, under seedsDir, made when makeSeed is set
// and the slot has none. Every later clone snapshots the seed, already
// the slot's id's, at a plain snapshot's cost (2 ms). A slot's first
// clone (makeSeed unset) comes from its seed only when one is left from
// before (a daemon restart), and otherwise from the template, chowned as
// a seed would be: a seed made then would cost every slot's start a
// second snapshot, and a slot whose resets all run in place never needs
// one (they clone single files, from the template). The template's InnoDB
// files and tables' definitions, which every server may write through
// svcuser.DataGID, keep their owner: on a compressed btrfs a chown copies
// the leaf of the file's inode with the references to the compressed
// extents next to it (a table's .ibd), up to some 200. Other backends give
// each file its owner as they make it, and clone the template itself.
func (p *Pool) seed(s *slot, id *svcuser.Claimed, makeSeed bool) (string, error) {
	tmpl := p.cat.DataDir(p.Meta.Hash)
	own := p.templateOwner(id)
	if own == nil || p.backend.Name() != "btrfs" {
		return tmpl, nil
	}
	dir := filepath.Join(p.dir, seedsDir)
	seed := filepath.Join(dir, fmt.Sprintf("%03d", s.idx))
	var st syscall.Stat_t
	err := syscall.Lstat(seed, &st)
	if err == nil && int(st.Uid) == own.UID {
		return seed, nil
	}
	if !makeSeed {
		return tmpl, nil
	}
	if err := rootOnlyDir(dir); err != nil {
		return "", fmt.Errorf("make the seeds directory: %w", err)
	}
	if err == nil {
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

// rootOnlyDir makes dir, or makes the directory there root's alone
// (0700). It changes nothing on disk when dir is so already: a chmod
// joins the filesystem's running transaction, and on btrfs waits out a
// commit in progress, which the start's snapshots keep busy, so a chmod
// per slot cost hundreds of milliseconds of wall each in a pool's start.
func rootOnlyDir(dir string) error {
	var st syscall.Stat_t
	err := syscall.Lstat(dir, &st)
	if errors.Is(err, syscall.ENOENT) {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		err = syscall.Lstat(dir, &st)
	}
	if err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st.Mode&0o7777 == 0o700 {
		return nil
	}
	return os.Chmod(dir, 0o700)
}

// templateOwner is owner(id) for a clone of the template: on btrfs with
// the template's chowns (cow.ListChowns), listed once per pool, so a
// snapshot is chowned without a walk of its own. When they cannot be
// listed, the clone is walked.
func (p *Pool) templateOwner(id *svcuser.Claimed) *cow.Owner {
	own := owner(id)
	if own == nil || p.backend.Name() != "btrfs" {
		return own
	}
	p.chownsOnce.Do(func() {
		c, err := cow.ListChowns(p.cat.DataDir(p.Meta.Hash), svcuser.DataGID)
		if err != nil {
			p.log.Warn("each slot's clone is chowned by a walk of its own", "template", p.Meta.Name, "error", err.Error())
			return
		}
		p.chowns = c
	})
	own.Chowns = p.chowns
	return own
}

// releaseID gives slot s's server id back once its clone is gone: its run
// directory and its seed go first, so nothing the id owns is left under
// the root.
func (p *Pool) releaseID(s *slot) { p.takeID(s).Release() }

// takeID removes slot s's run directory and seed and returns its server
// id, no longer the slot's, for the caller to release (svcuser.ReleaseAll
// gives a pool's ids back at once). It returns nil, and the slot keeps
// its id, when the seed was not removed.
func (p *Pool) takeID(s *slot) *svcuser.Claimed {
	if p.cat != nil {
		if err := p.cat.Root().Check(s.run); err == nil {
			_ = os.RemoveAll(s.run)
		}
	}
	seed := filepath.Join(p.dir, seedsDir, fmt.Sprintf("%03d", s.idx))
	if _, err := os.Lstat(seed); err == nil {
		if err := p.backend.Remove(seed); err != nil {
			p.log.Warn("a slot's seed was not removed, so its server id is kept", "template", p.Meta.Name, "slot", s.idx, "error", err.Error())
			return nil
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id := s.id
	s.id = nil
	return id
}

// owner is who a clone's files belong to: the server id, or nil (the
// template's owner) when servers run as pristine's own user. The
// template's shareable files stay the template's (svcuser.DataGID).
func owner(id *svcuser.Claimed) *cow.Owner {
	if id == nil || !id.Drop {
		return nil
	}
	return &cow.Owner{UID: id.UID, GID: id.GID, Shared: svcuser.DataGID}
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
