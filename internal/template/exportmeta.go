package template

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/exportmeta"
)

// exportMeta writes the export metadata of the build's InnoDB tables
// (internal/exportmeta) from the build's server, whose tables the load
// left open, into the template's directory beside its data, where its
// pools' in-place resets find it. Exported by a pool's first slot instead,
// it cost that slot (and so the first lease) the opening of every table:
// 0.15-0.25 s at 300 tables (docs/benchmarks.md, "The first lease"). It
// is best effort: on failure nothing is left and the pool exports it
// itself.
//
// The template's facts (exportmeta.Facts) go beside it, read on the same
// server for the same reason: the pool's first slot would open every
// table to read them.
func (b *Builder) exportMeta(ctx context.Context, db *sql.DB, data string) {
	dir := filepath.Join(b.stageDirOf(data), exportmeta.Dir)
	if err := exportmeta.Export(ctx, db, data, dir); err != nil {
		_ = os.RemoveAll(dir)
		b.progress("warning: the InnoDB export metadata was not exported (%v): the first pool exports it", err)
		return
	}
	ft, err := exportmeta.ReadFacts(ctx, db, b.bin.Flavor)
	if err == nil {
		err = exportmeta.WriteFacts(dir, ft)
	}
	if err != nil {
		b.progress("warning: the template's facts were not read (%v): the first pool reads them", err)
	}
}

// stageDirOf is the catalog directory of the build whose data directory
// is data: the one its RAM stage was made for, else data's parent.
func (b *Builder) stageDirOf(data string) string {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	for dir, st := range b.ram {
		if st.data() == data {
			return dir
		}
	}
	return filepath.Dir(data)
}
