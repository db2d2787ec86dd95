package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/scratch"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/units"
)

// scratchUpMoving brings the scratch filesystem up over a data directory
// that already holds templates: each template is exported to an archive
// in <root>/moving (on the root's own filesystem), the old data directory
// is emptied, the scratch filesystem is mounted, and the archives are
// imported into it (as btrfs subvolumes or reflink copies, so their slots
// are thin clones). Pools must be down. If the scratch step fails after
// the data was emptied, the archives stay where they are and the error
// says how to import them.
func scratchUpMoving(ctx context.Context, g *Globals, root *rootdir.Root, opt scratch.Options) (*scratch.Info, error) {
	if ents, _ := os.ReadDir(filepath.Join(root.Data(), "pools")); len(ents) > 0 {
		return nil, fmt.Errorf("scratch up --move: pools are up on %s: run `pristine pool down --all` first", root.Data())
	}
	old, err := template.Open(ctx, root, "auto")
	if err != nil {
		return nil, err
	}
	all, err := old.Catalog().List()
	if err != nil {
		return nil, err
	}
	moving := filepath.Join(root.Path, "moving")
	if err := os.MkdirAll(moving, 0o700); err != nil {
		return nil, fmt.Errorf("scratch up --move: %w", err)
	}
	var files []string
	for _, m := range all {
		f := filepath.Join(moving, m.Hash+".prsa")
		g.stderrf("pristine: scratch up --move: saving template %s (%s, %s) to %s", m.Name, m.Hash[:12], units.Bytes(m.Bytes), f)
		if err := exportTo(ctx, old, m, f); err != nil {
			os.RemoveAll(moving)
			return nil, fmt.Errorf("scratch up --move: %w (nothing was changed)", err)
		}
		files = append(files, f)
	}
	kept := func(err error) error {
		return fmt.Errorf("scratch up --move: %w; the templates are saved in %s: import each with `pristine template import FILE`, then remove the directory", err, moving)
	}
	for _, m := range all {
		if err := old.Catalog().Remove(m, nil); err != nil {
			return nil, kept(err)
		}
	}
	if _, err := old.Catalog().PruneBases(); err != nil {
		return nil, kept(err)
	}
	// What is left is pristine's own leftovers (locks, empty directories,
	// aborted builds): the root's data directory is pristine's alone.
	ents, _ := os.ReadDir(root.Data())
	for _, e := range ents {
		p := filepath.Join(root.Data(), e.Name())
		if err := root.Check(p); err != nil {
			return nil, kept(err)
		}
		if err := os.RemoveAll(p); err != nil {
			return nil, kept(err)
		}
	}
	info, err := scratch.Up(ctx, root, opt)
	if err != nil {
		return nil, kept(err)
	}
	st, err := g.openBuilder(ctx, "auto")
	if err != nil {
		return nil, kept(err)
	}
	for i, f := range files {
		in, err := os.Open(f)
		if err != nil {
			return nil, kept(err)
		}
		// The store's own export, named by its hash: it keeps its key.
		key := strings.TrimSuffix(filepath.Base(f), ".prsa")
		m, _, err := st.ImportWith(ctx, in, template.ImportOptions{Key: key})
		in.Close()
		if err != nil {
			return nil, kept(err)
		}
		g.stderrf("pristine: scratch up --move: template %s (%s) is on the scratch filesystem, %s backend", m.Name, m.Hash[:12], m.Backend)
		os.Remove(f)
		files[i] = ""
	}
	os.Remove(moving)
	return info, nil
}

// exportTo writes a template's archive to file, temp-then-rename.
func exportTo(ctx context.Context, st *template.Builder, m *catalog.Meta, file string) error {
	tmp := file + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = st.Export(ctx, m, out, archive.PackOptions{})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
