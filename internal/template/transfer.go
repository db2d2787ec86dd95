package template

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
)

// Export writes template m (its data directory and meta.json) to w in
// pristine's archive format, so it can be imported on another runner.
//
// The archive carries data and a description, no secret: its meta.json is
// the template's without the build account's password
// (catalog.Meta.Exported). A template whose server options are not all
// ones a template may carry (one from before the allow-list) is refused.
func (b *Builder) Export(ctx context.Context, m *catalog.Meta, w io.Writer, opt archive.PackOptions) (archive.Stats, error) {
	dir := b.cat.Dir(m.Hash)
	meta, err := catalog.ReadMeta(dir)
	if err != nil {
		return archive.Stats{}, fmt.Errorf("export template %s: %w", m.Name, err)
	}
	if err := catalog.CheckServerOptions(meta); err != nil {
		return archive.Stats{}, fmt.Errorf("export template %s: %w", m.Name, err)
	}
	exported, err := meta.Exported()
	if err != nil {
		return archive.Stats{}, fmt.Errorf("export template %s: %w", m.Name, err)
	}
	opt.Replace = map[string][]byte{catalog.MetaFile: exported}
	st, err := archive.Pack(ctx, dir, w, opt)
	if err != nil {
		return st, fmt.Errorf("export template %s: %w", m.Name, err)
	}
	return st, nil
}

// ImportOptions say how Import treats an archive.
type ImportOptions struct {
	archive.UnpackOptions
	// Key, when set, is a content key the caller vouches for: the archive's
	// meta.json must claim exactly this key, and the template is filed
	// under it, so that it answers every build of that key. Only a source
	// the operator trusts to answer for content keys may set it: a fleet
	// cache repository the operator named (`template build --cache`,
	// `serve --allow-cache`), or the store's own export (`scratch up
	// --move`). Empty (every `template import` and `template pull`): the
	// meta.json's key is not trusted and the template is filed under
	// catalog.ImportKey of the archive's digest.
	Key string
	// Source, when set with Key empty, is a digest of the archive that the
	// caller has verified itself (an OCI manifest digest, every chunk
	// checked against it): the key is derived from it, and the archive is
	// not hashed again.
	Source string
}

// Import reads a template archive written by Export and adds it to the
// store, as an untrusted import (ImportOptions with no Key).
func (b *Builder) Import(ctx context.Context, r io.Reader, opt archive.UnpackOptions) (*catalog.Meta, bool, error) {
	return b.ImportWith(ctx, r, ImportOptions{UnpackOptions: opt})
}

// ImportWith reads a template archive written by Export and adds it to the
// store. It refuses a template of another server version and a meta.json
// that is not one pristine writes (a hash that is not 64 hex digits,
// databases the data directory lacks, ...; see catalog.Meta.CheckImport).
//
// The archive carries data, not permissions or identity: it is extracted
// into a private staging directory (templates/.import-*, mode 0700 from
// the start) with pristine's modes (archive.FileMode, archive.DirMode),
// and unless opt.Key vouches for it, the template is filed under
// catalog.ImportKey of the archive's digest, never under the content key
// its meta.json claims, so an import cannot answer a build it did not make.
// It returns the existing template when that key is already in the store.
// A failed import leaves nothing behind.
func (b *Builder) ImportWith(ctx context.Context, r io.Reader, opt ImportOptions) (*catalog.Meta, bool, error) {
	work, err := b.cat.StageImport()
	if err != nil {
		return nil, false, fmt.Errorf("import template: %w", err)
	}
	defer b.cat.Discard(work)
	staged := filepath.Join(work, "archive")
	source := opt.Source
	var digest *archiveDigest
	if opt.Key == "" && source == "" {
		digest = hashArchive(r)
		r = digest.r
	}
	_, err = archive.Unpack(ctx, r, staged, opt.UnpackOptions)
	if digest != nil {
		sum, herr := digest.wait(err != nil)
		if err == nil && herr != nil {
			err = fmt.Errorf("hash the archive: %w", herr)
		}
		source = "sha256:" + sum
	}
	if err != nil {
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
	// The build account is pristine's, locked below with a password
	// nobody keeps (secure): a password the archive carries is dropped,
	// and no other account is taken for it.
	m.User, m.Password = "pristine", ""
	if opt.Key != "" {
		if m.Hash != opt.Key {
			return nil, false, fmt.Errorf("import template: the archive's meta.json claims key %s, not the %s it was fetched as: the cache entry is not the template its tag names; push the template again", m.Hash[:12], opt.Key[:min(12, len(opt.Key))])
		}
		if m.Imported != "" && catalog.ImportKey(m.Imported) != m.Hash {
			m.Imported = ""
		}
	} else {
		// The meta.json's keys are claims nobody checked: file the template
		// under its archive's digest and drop the client's key, so it
		// answers no build (template build, an API build, --cache) of the
		// key it claims.
		m.Hash, m.Key, m.Imported = catalog.ImportKey(source), "", source
	}
	// Times are this store's: a claimed future time would make the import
	// the newest build of its name and the last one gc removes.
	now := time.Now().UTC()
	if m.Created.After(now) || m.Created.IsZero() {
		m.Created = now
	}
	m.LastUsed = now
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
	// Clone the data into a build directory of this store's backend (a
	// btrfs subvolume, so slots can snapshot it) that the servers' account
	// can reach; the archive stays in the private staging directory.
	dir, err := b.cat.Stage(m.Hash)
	if err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	published := false
	defer func() {
		if !published {
			_ = b.cat.Discard(dir)
		}
	}()
	if err := b.cat.Backend().Clone(filepath.Join(staged, "data"), filepath.Join(dir, "data")); err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	// The archive's accounts are another root's: re-key them for this
	// one (root's password becomes this root's secret, the build account
	// is locked, administrative DEFINERs re-owned) before any server
	// serves the data on TCP; then the data is sealed to pristine's user.
	err = b.secure(ctx, filepath.Join(dir, "data"), BuildProfileFor(m), m)
	if serr := b.seal(filepath.Join(dir, "data")); err == nil {
		err = serr
	}
	if err == nil {
		err = m.TakeLogSize(filepath.Join(dir, "data"))
	}
	if err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	m.Accounts = catalog.AccountsVersion
	m.Backend = b.cat.Backend().Name()
	if err := b.cat.Publish(dir, m); err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	published = true
	return m, true, nil
}

// archiveDigest is the SHA-256 of an archive being imported.
type archiveDigest struct {
	r    io.Reader // what Unpack reads
	h    hash.Hash
	done chan error // set when a regular file is hashed beside Unpack
	stop atomic.Bool
}

// hashArchive hashes the archive r as Unpack reads it. A regular file is
// hashed whole by a goroutine beside Unpack, which still gets the file (and
// clones extents out of it rather than reading them); a stream is hashed as
// it passes (a pipe keeps its larger buffer).
func hashArchive(r io.Reader) *archiveDigest {
	d := &archiveDigest{r: r, h: sha256.New()}
	f, ok := r.(*os.File)
	var fi os.FileInfo
	if ok {
		var err error
		if fi, err = f.Stat(); err != nil {
			ok = false
		}
	}
	switch {
	case ok && fi.Mode().IsRegular():
		d.done = make(chan error, 1)
		go func() {
			buf := make([]byte, 1<<20)
			sr := io.NewSectionReader(f, 0, fi.Size())
			for !d.stop.Load() {
				n, err := sr.Read(buf)
				d.h.Write(buf[:n])
				if err == io.EOF {
					d.done <- nil
					return
				}
				if err != nil {
					d.done <- err
					return
				}
			}
			d.done <- errors.New("stopped")
		}()
	case ok && fi.Mode()&os.ModeNamedPipe != 0:
		archive.GrowPipe(f)
		d.r = io.TeeReader(f, d.h)
	default:
		d.r = io.TeeReader(r, d.h)
	}
	return d
}

// wait returns the digest in hex once the whole archive is hashed; with
// abandon (Unpack failed) a file's hashing stops early.
func (d *archiveDigest) wait(abandon bool) (string, error) {
	if d.done != nil {
		if abandon {
			d.stop.Store(true)
		}
		if err := <-d.done; err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(d.h.Sum(nil)), nil
}
