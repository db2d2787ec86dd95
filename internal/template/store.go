package template

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/rootdir"
)

// Store keeps templates under root.Data()/templates/<hash>/, each a data
// directory (data/) and its meta.json.
type Store struct {
	Root    *rootdir.Root
	Backend cow.Backend
	Bin     *mariadb.Binary
	// Admin is root@localhost's password in every data directory of the
	// store (the root's admin secret); never logged.
	Admin string
	// Progress receives one line per step of long work; nil means quiet.
	Progress func(format string, args ...any)
	// Log receives warnings (a template directory skipped for a bad
	// meta.json); nil means slog.Default().
	Log *slog.Logger
}

func (s *Store) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// ErrNotFound is returned (wrapped) for a template name or hash that is not
// in the store.
var ErrNotFound = errors.New("template not found")

// ErrInUse is returned (wrapped) when removing a template a pool still uses.
var ErrInUse = errors.New("template in use")

// NewStore opens the template store of root, on the backend chosen by name
// ("auto" detects) and the installed server.
func NewStore(ctx context.Context, root *rootdir.Root, backend string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(root.Data(), "templates"), 0o755); err != nil {
		return nil, fmt.Errorf("open template store: %w", err)
	}
	b, err := cow.ByName(root, backend, root.Data())
	if err != nil {
		return nil, err
	}
	bin, err := mariadb.FindBinary(ctx)
	if err != nil {
		return nil, err
	}
	secret, err := root.AdminSecret()
	if err != nil {
		return nil, err
	}
	return &Store{Root: root, Backend: b, Bin: bin, Admin: secret}, nil
}

func (s *Store) progress(format string, args ...any) {
	if s.Progress != nil {
		s.Progress(format, args...)
	}
}

func (s *Store) templatesDir() string { return filepath.Join(s.Root.Data(), "templates") }

// Dir is the directory of the template with hash.
func (s *Store) Dir(hash string) string { return filepath.Join(s.templatesDir(), hash) }

// DataDir is the golden data directory of the template with hash: the
// source of every clone.
func (s *Store) DataDir(hash string) string { return filepath.Join(s.Dir(hash), "data") }

// List returns every built template, newest first.
func (s *Store) List() ([]*Meta, error) {
	ents, err := os.ReadDir(s.templatesDir())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list templates: %w", err)
	}
	var out []*Meta
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		m, err := s.loadMeta(e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // a template without meta.json is not finished
		}
		if err != nil {
			s.warnBad(s.Dir(e.Name()), err)
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// Get finds a template by name (the newest build of that name), by full
// hash, or by a unique hash prefix of at least 8 digits.
func (s *Store) Get(ref string) (*Meta, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var byPrefix []*Meta
	for _, m := range all {
		if m.Name == ref || m.Hash == ref || (m.Key != "" && m.Key == ref) {
			return m, nil
		}
		if len(ref) >= 8 && strings.HasPrefix(m.Hash, ref) {
			byPrefix = append(byPrefix, m)
		}
	}
	if len(byPrefix) == 1 {
		return byPrefix[0], nil
	}
	return nil, fmt.Errorf("%w: %q: build it with `pristine template build %s --from-sql FILE`, or see `pristine template ls`", ErrNotFound, ref, ref)
}

// Touch records that a template was used now, for gc's least-recently-used order.
func (s *Store) Touch(m *Meta) error {
	m.LastUsed = time.Now().UTC()
	return writeMeta(s.Dir(m.Hash), m)
}

// Remove deletes a template. inUse reports whether a pool still uses a hash;
// such a template is refused.
func (s *Store) Remove(m *Meta, inUse func(hash string) bool) error {
	if inUse != nil && inUse(m.Hash) {
		return fmt.Errorf("%w: template %s (%s) backs a pool: run `pristine pool down --template %s` first", ErrInUse, m.Name, m.Hash[:12], m.Name)
	}
	unlock, err := s.lock(m.Hash)
	if err != nil {
		return err
	}
	defer unlock()
	return s.removeLocked(m)
}

// removeLocked is Remove for a caller that holds the hash's lock (a second
// flock on the lock file would wait for the first).
func (s *Store) removeLocked(m *Meta) error {
	// meta.json goes first: from then on the template is invisible even if
	// the removal of its data is interrupted.
	dir := s.Dir(m.Hash)
	b, err := s.BackendFor(m)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, metaFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove template %s: %w", m.Hash[:12], err)
	}
	if err := s.removeDirWith(b, dir); err != nil {
		return err
	}
	s.removeLock(m.Hash)
	return nil
}

// BackendFor returns the backend a template was built with: its clones must
// be made the same way (a btrfs snapshot needs a subvolume as its source).
func (s *Store) BackendFor(m *Meta) (cow.Backend, error) {
	if m.Backend == "" || m.Backend == s.Backend.Name() {
		return s.Backend, nil
	}
	return cow.ByName(s.Root, m.Backend, s.Root.Data())
}

// removeDir removes a template or build directory: the data tree through the
// backend (a btrfs subvolume needs it), the rest plainly.
func (s *Store) removeDir(dir string) error {
	return s.removeDirWith(s.Backend, dir)
}

func (s *Store) removeDirWith(b cow.Backend, dir string) error {
	if err := s.Root.Check(dir); err != nil {
		return err
	}
	if err := b.Remove(filepath.Join(dir, "data")); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// GC removes templates, least recently used first, until the store takes at
// most maxBytes. Templates a pool uses are kept. It returns what it removed.
func (s *Store) GC(maxBytes int64, inUse func(hash string) bool) ([]*Meta, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var total int64
	for _, m := range all {
		total += m.Bytes
	}
	sort.Slice(all, func(i, j int) bool { return lastUse(all[i]).Before(lastUse(all[j])) })
	var removed []*Meta
	for _, m := range all {
		if total <= maxBytes {
			break
		}
		if inUse != nil && inUse(m.Hash) {
			continue
		}
		if err := s.Remove(m, nil); err != nil {
			return removed, err
		}
		total -= m.Bytes
		removed = append(removed, m)
	}
	s.cleanBuilds()
	_, err = s.PruneBases()
	return removed, err
}

func lastUse(m *Meta) time.Time {
	if m.LastUsed.After(m.Created) {
		return m.LastUsed
	}
	return m.Created
}

// cleanBuilds removes build directories left by builds that were killed;
// a live build holds its lock, so its directory is skipped.
func (s *Store) cleanBuilds() {
	ents, _ := os.ReadDir(s.templatesDir())
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, ".build-") {
			continue
		}
		hash := strings.TrimPrefix(name, ".build-")
		f, err := s.tryLock(hash)
		if err != nil || f == nil {
			continue
		}
		_ = s.removeDir(filepath.Join(s.templatesDir(), name))
		f()
	}
}

// lock takes the build lock of a hash, waiting for a concurrent builder.
func (s *Store) lock(hash string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.templatesDir(), "."+hash+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock template %s: %w", hash[:12], err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock template %s: %w", hash[:12], err)
	}
	return func() { f.Close() }, nil
}

// tryLock takes the lock of a hash if nobody holds it; nil means busy.
func (s *Store) tryLock(hash string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.templatesDir(), "."+hash+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, nil
	}
	return func() { f.Close() }, nil
}

// diskUsage is the space a tree takes on disk (allocated blocks).
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}
