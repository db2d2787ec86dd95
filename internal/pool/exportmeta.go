package pool

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/pristinedb/pristine/internal/exportmeta"
)

// InnoDB imports a tablespace with secondary indexes only with the
// table's export metadata beside it (the .cfg file FLUSH TABLES ... FOR
// EXPORT writes: columns, index ids and root pages, AUTO_INCREMENT). A
// fresh slot's tables are the template's, so one export serves every slot
// of the pool. A template build exports it from its own server into the
// template's directory (exportmeta.Dir); for a template without it (an
// older build, an import), it is exported once, from the first slot that
// boots on a fresh clone, and kept in the pool's directory (metaDir,
// root's only).

// metaDir holds the pool's export metadata (exportmeta.Pack).
const metaDir = ".export-meta"

// exportMu makes one slot of a pool export at a time (the others find it
// done).
var exportMu sync.Mutex

// metaPath is where the pool's export metadata is: the template's, when
// its build exported it, else the pool's own.
func (p *Pool) metaPath() string {
	if tm := filepath.Join(p.cat.Dir(p.Meta.Hash), exportmeta.Dir); exportmeta.Complete(tm) {
		return tm
	}
	return filepath.Join(p.dir, metaDir)
}

// exportMeta exports the metadata of the template's InnoDB tables from a
// freshly booted slot, if neither the template nor the pool has it yet.
// It is best effort: a table without metadata is reset fully when
// changed.
func (p *Pool) exportMeta(ctx context.Context, admin *sql.DB, s *slot) {
	exportMu.Lock()
	defer exportMu.Unlock()
	dir := p.metaPath()
	if exportmeta.Complete(dir) {
		return
	}
	if err := exportmeta.Export(ctx, admin, filepath.Join(s.dir, "data"), dir); err != nil {
		p.log.Warn("in-place reset: the template's InnoDB export metadata could not be read; changed InnoDB tables reset fully", "template", p.Meta.Name, "error", err.Error())
	}
}

// templateFacts returns the template's facts its build read
// (exportmeta.Facts), nil when it has none (an older build, an import: a
// template from elsewhere carries data only, and the pool's first slot
// reads them from its server).
func (p *Pool) templateFacts() *exportmeta.Facts {
	dir := filepath.Join(p.cat.Dir(p.Meta.Hash), exportmeta.Dir)
	ft, err := exportmeta.LoadFacts(dir)
	if err != nil {
		p.log.Warn("in-place reset: the template's facts could not be read; the first slot reads them from its server", "template", p.Meta.Name, "error", err.Error())
	}
	return ft
}

// metaSets caches the export metadata read from each pack directory:
// one entry per directory, read again when the pack's inode or
// modification time changed (a rebuilt template).
var metaSets sync.Map // dir -> cachedSet

type cachedSet struct {
	stamp string
	set   *exportmeta.Set
}

// metaSet returns the pool's export metadata, read once per pack; nil
// when there is none (every changed InnoDB table then resets fully).
func (p *Pool) metaSet() *exportmeta.Set {
	dir := p.metaPath()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, exportmeta.Pack), &st); err != nil {
		return nil
	}
	stamp := fmt.Sprintf("%d %d.%d", st.Ino, st.Mtim.Sec, st.Mtim.Nsec)
	if v, ok := metaSets.Load(dir); ok && v.(cachedSet).stamp == stamp {
		return v.(cachedSet).set
	}
	set, err := exportmeta.Read(dir)
	if err != nil {
		p.log.Warn("in-place reset: the template's InnoDB export metadata could not be read; changed InnoDB tables reset fully", "template", p.Meta.Name, "error", err.Error())
		return nil
	}
	metaSets.Store(dir, cachedSet{stamp: stamp, set: set})
	return set
}

// forgetMeta drops the pool's cached export metadata (Down): the next
// pool of the template reads its pack again.
func (p *Pool) forgetMeta() {
	metaSets.Delete(filepath.Join(p.dir, metaDir))
	if p.cat == nil || p.Meta == nil {
		return // a pool of the unit tests' fakes
	}
	metaSets.Delete(filepath.Join(p.cat.Dir(p.Meta.Hash), exportmeta.Dir))
}
