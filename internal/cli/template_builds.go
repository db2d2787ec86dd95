package cli

import (
	"fmt"
	"strings"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/template"
)

// supersede removes the older builds of a freshly built template's name,
// so a name means one template; a build a pool still uses is kept, and the
// user is told which and how to remove it.
func (g *Globals) supersede(st *template.Builder, m *catalog.Meta) error {
	removed, kept, err := st.Catalog().Supersede(m, inUse(st))
	for _, old := range removed {
		g.stderrf("pristine: template %s %s replaces %s, which was removed", m.Name, m.Hash[:12], old.Hash[:12])
	}
	for _, old := range kept {
		g.stderrf("pristine: template %s %s is newer than %s, which a pool still uses: `pristine pool down --template %s`, then `pristine template rm %s`",
			m.Name, m.Hash[:12], old.Hash[:12], m.Name, old.Hash[:12])
	}
	if err == nil {
		_, err = st.Catalog().PruneBases()
	}
	return err
}

// lsName is a template's name in `template ls`: an older build of a name
// (kept because a pool uses it) is marked so, since `NAME` means the newest.
func lsName(m *catalog.Meta, all []*catalog.Meta) string {
	for _, o := range all {
		if o.Name == m.Name && o.Created.After(m.Created) {
			return m.Name + " (older build)"
		}
	}
	return m.Name
}

// lsParent is a fork's parent as `template ls` shows it: its name and
// hash, "(gone)" once it was removed; "-" for a template that is no fork.
func lsParent(m *catalog.Meta, all []*catalog.Meta) string {
	if m.Parent == "" {
		return "-"
	}
	p := m.ParentName + " (" + m.Parent[:12] + ")"
	for _, o := range all {
		if o.Hash == m.Parent {
			return p
		}
	}
	return p + " (gone)"
}

// noteOlderBuilds tells the user, after `template rm NAME`, which builds of
// the name remain (the name now means the newest of them).
func (g *Globals) noteOlderBuilds(st *template.Builder, name string) {
	left, err := st.Catalog().Builds(name)
	if err != nil || len(left) == 0 {
		if _, err := st.Catalog().PruneBases(); err != nil {
			fmt.Fprintf(g.IO.Err, "pristine: %v\n", err)
		}
		return
	}
	hashes := make([]string, len(left))
	for i, m := range left {
		hashes[i] = m.Hash[:12]
	}
	g.stderrf("pristine: %d other build(s) of %s remain: %s (%s now names %s)", len(left), name, strings.Join(hashes, ", "), name, hashes[0])
}
