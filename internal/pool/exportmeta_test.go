package pool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/exportmeta"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// The InnoDB export metadata of a template of more tables than two
// export batches, one of them MyISAM (no metadata), is one .cfg per
// InnoDB table and the completion mark, with no .cfg left in any data
// directory: exported by the build into the template's directory (the
// pool then exports nothing and its in-place resets read the template's),
// and by the pool's first slot for a template without it (an older
// build).
func TestExportMeta(t *testing.T) {
	n := 2*exportmeta.Batch + 17
	var sql strings.Builder
	for i := range n {
		fmt.Fprintf(&sql, "CREATE TABLE t%d (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20), KEY ix_v (v)) ENGINE=InnoDB;\n", i)
	}
	sql.WriteString("CREATE TABLE plain (id INT PRIMARY KEY) ENGINE=MyISAM;\n")
	st := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, st, "app", sql.String(), template.BuildOptions{})
	tmplMeta := filepath.Join(st.Catalog().Dir(m.Hash), exportmeta.Dir)
	check := func(t *testing.T, dir string) {
		t.Helper()
		if !exportmeta.Complete(dir) {
			t.Fatalf("no complete export metadata in %s", dir)
		}
		set, err := exportmeta.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if set.Len() != n {
			t.Errorf("%d tables' metadata in %s, want %d (one per InnoDB table)", set.Len(), dir, n)
		}
		if _, ok := set.Get("app", "plain"); ok {
			t.Error("a MyISAM table got export metadata")
		}
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		// The template's holds its facts too (facts_test.go); the pool's
		// own, the metadata only.
		want := []string{exportmeta.FactsFile, exportmeta.Pack}
		if dir != tmplMeta {
			want = want[1:]
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s holds %v, want %v", dir, names, want)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, want mode 0700 (no server may read or write it)", dir, fi.Mode())
		}
	}
	up := func(t *testing.T) *Pool {
		t.Helper()
		p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 1, Profile: mariadb.DefaultProfile()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Down(context.Background()) })
		return p
	}
	noCfgIn := func(t *testing.T, data string) {
		t.Helper()
		if left, _ := filepath.Glob(filepath.Join(data, "app", "*.cfg")); len(left) > 0 {
			t.Errorf("%d .cfg files left in %s (UNLOCK TABLES removes them): %v", len(left), data, left[:1])
		}
	}

	t.Run("by the build", func(t *testing.T) {
		check(t, tmplMeta)
		noCfgIn(t, st.Catalog().DataDir(m.Hash))
		p := up(t)
		if got := p.metaPath(); got != tmplMeta {
			t.Errorf("the pool reads export metadata from %s, want the template's %s", got, tmplMeta)
		}
		if _, err := os.Stat(filepath.Join(p.dir, metaDir)); err == nil {
			t.Error("the pool exported metadata the template has")
		}
		noCfgIn(t, filepath.Join(p.slots[0].dir, "data"))
		if set := p.metaSet(); set.Len() != n {
			t.Errorf("the in-place reset gets metadata of %d tables, want %d", set.Len(), n)
		}
		if err := p.Down(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, ok := metaSets.Load(tmplMeta); ok {
			t.Error("the pool's metadata stays cached after Down")
		}
	})
	t.Run("by the first slot", func(t *testing.T) {
		built, err := exportmeta.Read(tmplMeta)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(tmplMeta); err != nil { // a template of an older build
			t.Fatal(err)
		}
		p := up(t)
		check(t, filepath.Join(p.dir, metaDir))
		// What the build exported is what a fresh slot exports: the
		// slow shutdown after the export changes no table's metadata.
		slot, err := exportmeta.Read(filepath.Join(p.dir, metaDir))
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			name := fmt.Sprintf("t%d", i)
			want, _ := built.Get("app", name)
			if got, ok := slot.Get("app", name); !ok || !bytes.Equal(got, want) {
				t.Errorf("%s: the build's export differs from a fresh slot's", name)
			}
		}
		if got := p.metaPath(); got != filepath.Join(p.dir, metaDir) {
			t.Errorf("the pool reads export metadata from %s, want its own", got)
		}
		noCfgIn(t, filepath.Join(p.slots[0].dir, "data"))
	})
}
