package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// What a template owns besides its directory: its lock file
// (templates/.<hash>.lock) and a share of the base data directories
// (base/<key>/, one per server version and profile, with
// templates/.base-<key>.lock). Remove and GC take all of it with them, so a
// catalog whose last template is gone is empty.

// PruneBases removes the base data directories (and their locks) once no
// template is left to be rebuilt from them soon: they are a cache of
// `mariadb-install-db`, remade by the next build. A base being made right
// now (its lock held) is skipped. It returns the directories removed.
func (c *Catalog) PruneBases() ([]string, error) {
	all, err := c.List()
	if err != nil || len(all) > 0 {
		return nil, err
	}
	baseDir := filepath.Join(c.root.Data(), "base")
	ents, err := os.ReadDir(baseDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("prune base directories: %w", err)
	}
	var removed []string
	for _, e := range ents {
		unlock, err := c.TryLock("base-" + e.Name())
		if err != nil || unlock == nil {
			continue
		}
		dir := filepath.Join(baseDir, e.Name())
		err = c.Discard(dir)
		if err == nil {
			c.RemoveLock("base-" + e.Name())
			removed = append(removed, dir)
		}
		unlock()
		if err != nil {
			return removed, err
		}
	}
	_ = os.Remove(baseDir) // only when empty
	return removed, nil
}

// Builds returns the templates called name, newest first: after a rebuild
// that could not replace an older build (a pool used it), more than one.
func (c *Catalog) Builds(name string) ([]*Meta, error) {
	all, err := c.List()
	if err != nil {
		return nil, err
	}
	var out []*Meta
	for _, m := range all {
		if m.Name == name {
			out = append(out, m)
		}
	}
	return out, nil
}

// Supersede removes the older builds of m's name, so that a rebuild under a
// name replaces the template it had. A build a pool still uses (inUse),
// or that forks were made from (lineage.go), is kept and returned in
// kept; `pristine template ls` marks it as older.
func (c *Catalog) Supersede(m *Meta, inUse func(hash string) bool) (removed, kept []*Meta, err error) {
	builds, err := c.Builds(m.Name)
	if err != nil {
		return nil, nil, err
	}
	for _, old := range builds {
		if old.Hash == m.Hash {
			continue
		}
		if (inUse != nil && inUse(old.Hash)) || c.CheckChildren(old) != nil {
			kept = append(kept, old)
			continue
		}
		if err := c.Remove(old, inUse); err != nil {
			return removed, kept, err
		}
		removed = append(removed, old)
	}
	return removed, kept, nil
}
