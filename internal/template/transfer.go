package template

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/archive"
)

// Export writes template m (its data directory and meta.json) to w in
// pristine's archive format, so it can be imported on another runner.
func (s *Store) Export(ctx context.Context, m *Meta, w io.Writer, opt archive.PackOptions) (archive.Stats, error) {
	st, err := archive.Pack(ctx, s.Dir(m.Hash), w, opt)
	if err != nil {
		return st, fmt.Errorf("export template %s: %w", m.Name, err)
	}
	return st, nil
}

// ErrIncompatible is returned (wrapped) when an imported template was built
// by another server version than the one installed here.
var ErrIncompatible = errors.New("template built by another server version")

// Import reads a template archive written by Export and adds it to the
// store under its hash. It refuses a template of another server version
// and a meta.json that is not one pristine writes (a hash that is not 64
// hex digits, databases the data directory lacks, ...; see checkImport),
// and returns the existing one when the hash is already in the store. A
// failed import leaves nothing behind.
func (s *Store) Import(ctx context.Context, r io.Reader, opt archive.UnpackOptions) (*Meta, bool, error) {
	work, err := os.MkdirTemp(s.templatesDir(), ".import-")
	if err != nil {
		return nil, false, fmt.Errorf("import template: %w", err)
	}
	if err := os.Chmod(work, 0o711); err != nil { // the servers' account reaches data/ through it
		return nil, false, fmt.Errorf("import template: %w", err)
	}
	defer s.removeDir(work)
	staged := filepath.Join(work, "archive")
	if _, err := archive.Unpack(ctx, r, staged, opt); err != nil {
		return nil, false, fmt.Errorf("import template: %w", err)
	}
	m, err := readMeta(staged)
	if err != nil {
		return nil, false, fmt.Errorf("import template: the archive holds no template (meta.json: %v)", err)
	}
	if m.Server != s.Bin.Version {
		return nil, false, fmt.Errorf("%w: %s was built by %s but %s is installed here: build it on this runner, or install the same server version", ErrIncompatible, clip(m.Name), clip(m.Server), s.Bin.Version)
	}
	if err := s.checkImport(m, staged); err != nil {
		return nil, false, fmt.Errorf("import template: the archive's meta.json does not describe a template pristine made: %w", err)
	}
	unlock, err := s.lock(m.Hash)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if have, err := s.loadMeta(m.Hash); err == nil {
		if CheckSecured(have) == nil {
			return have, false, nil
		}
		// A template of an older pristine is replaced by the import.
		if err := s.removeLocked(have); err != nil {
			return nil, false, err
		}
	}
	// Clone the data into a directory of this store's backend (a btrfs
	// subvolume, so slots can snapshot it), then publish under the hash.
	if err := s.Backend.Clone(filepath.Join(staged, "data"), filepath.Join(work, "data")); err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	// The archive's accounts are another root's: re-key them for this
	// one (root's password becomes this root's secret, the build account
	// is locked) before any server serves the data on TCP.
	if err := s.secure(ctx, filepath.Join(work, "data"), BuildProfileFor(m)); err != nil {
		return nil, false, fmt.Errorf("import template %s: %w", m.Name, err)
	}
	m.Accounts = AccountsVersion
	m.Backend = s.Backend.Name()
	m.Bytes = diskUsage(filepath.Join(work, "data"))
	if err := writeMeta(work, m); err != nil {
		return nil, false, err
	}
	if err := s.Backend.Remove(filepath.Join(staged, "data")); err != nil {
		return nil, false, err
	}
	if err := os.RemoveAll(staged); err != nil {
		return nil, false, err
	}
	if err := os.Rename(work, s.Dir(m.Hash)); err != nil {
		return nil, false, fmt.Errorf("import template %s: publish: %w", m.Name, err)
	}
	return m, true, nil
}
