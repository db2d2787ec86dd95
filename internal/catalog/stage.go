package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A build happens in a staged directory beside the templates, under the
// build lock of its hash (templates/.<hash>.lock, an flock):
//
//	unlock, _ := c.Lock(hash)   // or TryLock, which does not wait
//	dir, _ := c.Stage(hash)     // templates/.build-<hash>/, empty
//	... make dir/data ...
//	c.Publish(dir, m)           // meta.json written, renamed to templates/<hash>/
//	unlock()
//
// A failed build calls Discard(dir). A build killed half-way leaves its
// .build-<hash> directory, which GC removes once nobody holds the lock.

// Lock takes the build lock of a hash, waiting for a concurrent builder.
// The returned function releases it.
func (c *Catalog) Lock(hash string) (unlock func(), err error) {
	f, err := os.OpenFile(c.lockPath(hash), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock template %s: %w", hash[:12], err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock template %s: %w", hash[:12], err)
	}
	return func() { f.Close() }, nil
}

// TryLock takes the lock of a hash if nobody holds it; a nil unlock means
// it is busy.
func (c *Catalog) TryLock(hash string) (unlock func(), err error) {
	f, err := os.OpenFile(c.lockPath(hash), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, nil
	}
	return func() { f.Close() }, nil
}

func (c *Catalog) lockPath(hash string) string {
	return filepath.Join(c.templatesDir(), "."+hash+".lock")
}

// RemoveLock deletes the lock file of a hash; the caller holds the lock or
// the hash's template is gone (a failed build, a removed template).
func (c *Catalog) RemoveLock(hash string) {
	_ = os.Remove(c.lockPath(hash))
}

// Stage makes an empty build directory for hash, removing one a killed
// build left; the caller holds the hash's lock.
func (c *Catalog) Stage(hash string) (string, error) {
	dir := filepath.Join(c.templatesDir(), ".build-"+hash)
	if err := c.Discard(dir); err != nil {
		return "", err
	}
	// Searchable by the servers' account, which owns the data directory
	// inside; meta.json stays the owner's.
	if err := os.Mkdir(dir, 0o711); err != nil {
		return "", fmt.Errorf("template build: %w", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", fmt.Errorf("template build: %w", err)
	}
	return dir, nil
}

// StageImport makes a fresh private directory for an archive being
// imported (templates/.import-*), mode 0700 from the start (os.MkdirTemp;
// never widened): nobody but pristine's user can reach what an archive
// holds before it is checked. The import clones the checked data into a
// Stage directory; the caller Discards this one when done.
func (c *Catalog) StageImport() (string, error) {
	return os.MkdirTemp(c.templatesDir(), ".import-")
}

// Publish records the space dir/data takes in m, writes m as dir's
// meta.json and renames dir to m's hash: from then on the template exists.
// The caller holds the hash's lock.
func (c *Catalog) Publish(dir string, m *Meta) error {
	m.Bytes = diskUsage(filepath.Join(dir, "data"))
	if err := writeMeta(dir, m); err != nil {
		return err
	}
	if err := os.Rename(dir, c.Dir(m.Hash)); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// BaseDir is the directory of the base data directory with key (BaseKey):
// an empty, initialised data directory every build of a server version
// and profile clones. Its lock is Lock("base-" + key); PruneBases removes
// it once no template is left.
func (c *Catalog) BaseDir(key string) string {
	return filepath.Join(c.root.Data(), "base", key)
}

// cleanBuilds removes build directories left by builds that were killed;
// a live build holds its lock, so its directory is skipped.
func (c *Catalog) cleanBuilds() {
	ents, _ := os.ReadDir(c.templatesDir())
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, ".build-") {
			continue
		}
		hash := strings.TrimPrefix(name, ".build-")
		f, err := c.TryLock(hash)
		if err != nil || f == nil {
			continue
		}
		_ = c.Discard(filepath.Join(c.templatesDir(), name))
		f()
	}
}
