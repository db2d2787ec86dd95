// Package catalog is the on-disk store of built templates: golden MariaDB
// data directories kept under <root>/data/templates/<hash>/, each a data
// directory (data/) and its meta.json, named by the content key of what
// made it (Key). It lists, finds, touches, removes and garbage-collects
// templates, holds the per-hash build locks, and stages and publishes
// builds: a build is made in .build-<hash>/ and renamed into place once
// its meta.json is written, so a half-made template is never seen.
//
// The catalog starts no server and runs no SQL: building is the template
// package's job (template.Builder), which stages into a catalog. Pools,
// the daemon and the commands read templates from here.
package catalog

import (
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
	"github.com/pristinedb/pristine/internal/rootdir"
)

// Catalog keeps templates under root.Data()/templates/<hash>/.
type Catalog struct {
	root    *rootdir.Root
	backend cow.Backend
	admin   string
	// Log receives warnings (a template directory skipped for a bad
	// meta.json); nil means slog.Default().
	Log *slog.Logger
}

// ErrNotFound is returned (wrapped) for a template name or hash that is not
// in the catalog.
var ErrNotFound = errors.New("template not found")

// ErrInUse is returned (wrapped) when removing a template a pool still uses.
var ErrInUse = errors.New("template in use")

// Open opens the template catalog of root, whose new templates are made on
// backend (existing ones keep theirs: BackendFor). It reads the root's
// admin secret, root@localhost's password in every data directory of the
// catalog (see CheckSecured).
func Open(root *rootdir.Root, backend cow.Backend) (*Catalog, error) {
	if err := os.MkdirAll(filepath.Join(root.Data(), "templates"), 0o755); err != nil {
		return nil, fmt.Errorf("open template store: %w", err)
	}
	secret, err := root.AdminSecret()
	if err != nil {
		return nil, err
	}
	return &Catalog{root: root, backend: backend, admin: secret}, nil
}

// Root is the pristine root the catalog lies in.
func (c *Catalog) Root() *rootdir.Root { return c.root }

// Backend is the copy-on-write backend new templates are made with.
func (c *Catalog) Backend() cow.Backend { return c.backend }

// Admin is root@localhost's password in every data directory of the
// catalog (the root's admin secret); never log it.
func (c *Catalog) Admin() string { return c.admin }

func (c *Catalog) logger() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

func (c *Catalog) templatesDir() string { return filepath.Join(c.root.Data(), "templates") }

// Dir is the directory of the template with hash.
func (c *Catalog) Dir(hash string) string { return filepath.Join(c.templatesDir(), hash) }

// DataDir is the golden data directory of the template with hash: the
// source of every clone.
func (c *Catalog) DataDir(hash string) string { return filepath.Join(c.Dir(hash), "data") }

// List returns every built template, newest first.
func (c *Catalog) List() ([]*Meta, error) {
	ents, err := os.ReadDir(c.templatesDir())
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
		m, err := c.Load(e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // a template without meta.json is not finished
		}
		if err != nil {
			c.warnBad(c.Dir(e.Name()), err)
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// Get finds a template by name (the newest build of that name), by full
// hash, or by a unique hash prefix of at least 8 digits.
func (c *Catalog) Get(ref string) (*Meta, error) { return c.Find(ref, nil) }

// Find is Get among the templates rank admits (rank(m) >= 0), preferring
// the lowest rank, then the newest: a caller that sees only some
// templates (a runner group, docs/security.md) finds only those. A nil
// rank admits every template alike.
func (c *Catalog) Find(ref string, rank func(*Meta) int) (*Meta, error) {
	all, err := c.List()
	if err != nil {
		return nil, err
	}
	var best *Meta
	bestRank := 0
	var byPrefix []*Meta
	for _, m := range all {
		r := 0
		if rank != nil {
			if r = rank(m); r < 0 {
				continue
			}
		}
		if m.Name == ref || m.Hash == ref || (m.Key != "" && m.Key == ref) {
			if best == nil || r < bestRank {
				best, bestRank = m, r
			}
			continue
		}
		if len(ref) >= 8 && strings.HasPrefix(m.Hash, ref) {
			byPrefix = append(byPrefix, m)
		}
	}
	if best != nil {
		return best, nil
	}
	if len(byPrefix) == 1 {
		return byPrefix[0], nil
	}
	return nil, fmt.Errorf("%w: %q: build it with `pristine template build %s --from-sql FILE`, or see `pristine template ls`", ErrNotFound, ref, ref)
}

// Touch records that a template was used now, for gc's least-recently-used order.
func (c *Catalog) Touch(m *Meta) error {
	m.LastUsed = time.Now().UTC()
	return writeMeta(c.Dir(m.Hash), m)
}

// Remove deletes a template. inUse reports whether a pool still uses a hash;
// such a template is refused.
func (c *Catalog) Remove(m *Meta, inUse func(hash string) bool) error {
	if inUse != nil && inUse(m.Hash) {
		return fmt.Errorf("%w: template %s (%s) backs a pool: run `pristine pool down --template %s` first", ErrInUse, m.Name, m.Hash[:12], m.Name)
	}
	unlock, err := c.Lock(m.Hash)
	if err != nil {
		return err
	}
	defer unlock()
	return c.RemoveLocked(m)
}

// RemoveLocked is Remove for a caller that holds the hash's lock (a second
// flock on the lock file would wait for the first).
func (c *Catalog) RemoveLocked(m *Meta) error {
	// meta.json goes first: from then on the template is invisible even if
	// the removal of its data is interrupted.
	dir := c.Dir(m.Hash)
	b, err := c.BackendFor(m)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, metaFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove template %s: %w", m.Hash[:12], err)
	}
	if err := c.removeDirWith(b, dir); err != nil {
		return err
	}
	c.RemoveLock(m.Hash)
	return nil
}

// BackendFor returns the backend a template was built with: its clones must
// be made the same way (a btrfs snapshot needs a subvolume as its source).
func (c *Catalog) BackendFor(m *Meta) (cow.Backend, error) {
	if m.Backend == "" || m.Backend == c.backend.Name() {
		return c.backend, nil
	}
	return cow.ByName(c.root, m.Backend, c.root.Data())
}

// Discard removes a directory the catalog staged or keeps (a build or
// import in progress, a base directory): the data tree through the backend
// (a btrfs subvolume needs it), the rest plainly.
func (c *Catalog) Discard(dir string) error {
	return c.removeDirWith(c.backend, dir)
}

func (c *Catalog) removeDirWith(b cow.Backend, dir string) error {
	if err := c.root.Check(dir); err != nil {
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

// GC removes templates, least recently used first, until the catalog takes
// at most maxBytes. Templates a pool uses are kept, and so is a fork's
// parent while the fork is (a chain goes fork first). It returns what it
// removed.
func (c *Catalog) GC(maxBytes int64, inUse func(hash string) bool) ([]*Meta, error) {
	all, err := c.List()
	if err != nil {
		return nil, err
	}
	var total int64
	for _, m := range all {
		total += m.Bytes
	}
	sort.Slice(all, func(i, j int) bool { return lastUse(all[i]).Before(lastUse(all[j])) })
	// A parent goes only once its forks are gone (lineage.go): the pass
	// is repeated while it removes something, so a chain goes leaf first.
	var removed []*Meta
	gone := map[string]bool{}
	for progress := true; progress && total > maxBytes; {
		progress = false
		for _, m := range all {
			if total <= maxBytes {
				break
			}
			if gone[m.Hash] || (inUse != nil && inUse(m.Hash)) || hasLiveChild(all, gone, m.Hash) {
				continue
			}
			if err := c.Remove(m, nil); err != nil {
				return removed, err
			}
			total -= m.Bytes
			removed = append(removed, m)
			gone[m.Hash], progress = true, true
		}
	}
	c.cleanBuilds()
	_, err = c.PruneBases()
	return removed, err
}

// hasLiveChild tells whether a fork of hash is among all and not gone.
func hasLiveChild(all []*Meta, gone map[string]bool, hash string) bool {
	for _, k := range childrenOf(all, hash) {
		if !gone[k.Hash] {
			return true
		}
	}
	return false
}

func lastUse(m *Meta) time.Time {
	if m.LastUsed.After(m.Created) {
		return m.LastUsed
	}
	return m.Created
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
