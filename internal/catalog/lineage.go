package catalog

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Lineage: a fork (`pristine lease fork`) records the template it was
// made from in Meta.Parent. Its data is a copy of its own, so removing
// a parent never breaks a fork; the lineage is kept honest instead:
// `template rm` refuses a parent whose forks are still here unless
// forced (CheckChildren), and GC removes forks before their parents.

// ErrHasChildren is returned (wrapped) when removing a template that
// forks were made from, without force.
var ErrHasChildren = errors.New("template has forks")

// Children returns the templates forked from the template with hash,
// newest first.
func (c *Catalog) Children(hash string) ([]*Meta, error) {
	all, err := c.List()
	if err != nil {
		return nil, err
	}
	return childrenOf(all, hash), nil
}

func childrenOf(all []*Meta, hash string) []*Meta {
	var out []*Meta
	for _, m := range all {
		if m.Parent == hash && m.Hash != hash {
			out = append(out, m)
		}
	}
	return out
}

// CheckChildren refuses the removal of m while forks of it are in the
// catalog, naming them and the flag that removes it anyway.
func (c *Catalog) CheckChildren(m *Meta) error {
	kids, err := c.Children(m.Hash)
	if err != nil || len(kids) == 0 {
		return err
	}
	names := make([]string, 0, len(kids))
	for _, k := range kids {
		names = append(names, k.Name+" ("+shortHash(k.Hash)+")")
	}
	sort.Strings(names)
	return fmt.Errorf("%w: template %s (%s) is the parent of %s: remove the forks first, or pass --force to remove it anyway (the forks keep their data; their parent is then shown as gone)", ErrHasChildren, m.Name, shortHash(m.Hash), strings.Join(names, ", "))
}
