package template

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
)

// Export writes template m (its data directory and meta.json) to w in
// pristine's archive format, so it can be imported on another runner.
func (b *Builder) Export(ctx context.Context, m *catalog.Meta, w io.Writer, opt archive.PackOptions) (archive.Stats, error) {
	st, err := archive.Pack(ctx, b.cat.Dir(m.Hash), w, opt)
	if err != nil {
		return st, fmt.Errorf("export template %s: %w", m.Name, err)
	}
	return st, nil
}

// Import reads a template archive written by Export and adds it to the
// store under its hash. It refuses a template of another server version
// and a meta.json that is not one pristine writes (a hash that is not 64
// hex digits, databases the data directory lacks, ...; see
// catalog.Meta.CheckImport),
// and returns the existing one when the hash is already in the store. A
// failed import leaves nothing behind.
func (b *Builder) Import(ctx context.Context, r io.Reader, opt archive.UnpackOptions) (*catalog.Meta, bool, error) {
	work, err := b.cat.StageImport()
	if err != nil {
		return nil, false, fmt.Errorf("import template: %w", err)
	}
	defer b.cat.Discard(work)
	staged := filepath.Join(work, "archive")
	if _, err := archive.Unpack(ctx, r, staged, opt); err != nil {
		return nil, false, fmt.Errorf("import template: %w", err)
	}
	m, err := catalog.ReadMeta(staged)
	if err != nil {
		return nil, false, fmt.Errorf("import template: the archive holds no template (meta.json: %v)", err)
	}
	if err := m.CheckServer(b.bin.Version); err != nil {
		return nil, false, err
	}
	if err := m.CheckImport(string(b.bin.Flavor), staged); err != nil {
		return nil, false, fmt.Errorf("import template: the archive's meta.json does not describe a template pristine made: %w", err)
	}
	unlock, err := b.cat.Lock(m.Hash)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if have, err := b.cat.Load(m.Hash); err == nil {
		if catalog.CheckSecured(have) == nil {
			return have, false, nil
		}
		// A template of an older pristine is replaced by the import.
		if err := b.cat.RemoveLocked(have); err != nil {
			return nil, false, err
		}
	}
	// Clone the data into a directory of this store's backend (a btrfs
	// subvolume, so slots can snapshot it), then publish under the hash.
	if err := b.cat.Backend().Clone(filepath.Join(staged, "data"), filepath.Join(work, "data")); err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	// The archive's accounts are another root's: re-key them for this
	// one (root's password becomes this root's secret, the build account
	// is locked) before any server serves the data on TCP.
	err = b.secure(ctx, filepath.Join(work, "data"), BuildProfileFor(m))
	if serr := b.seal(filepath.Join(work, "data")); err == nil {
		err = serr
	}
	if err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	m.Accounts = catalog.AccountsVersion
	m.Backend = b.cat.Backend().Name()
	if err := b.cat.Backend().Remove(filepath.Join(staged, "data")); err != nil {
		return nil, false, err
	}
	if err := os.RemoveAll(staged); err != nil {
		return nil, false, err
	}
	if err := b.cat.Publish(work, m); err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	return m, true, nil
}
