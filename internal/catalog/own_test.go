package catalog_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// tree lists every path under dir, relative to it.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// TestRemoveLeavesNothing: removing the last template (or a failed build)
// leaves no base directory, lock, run directory or spooled SQL behind.
func TestRemoveLeavesNothing(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
	if err := st.Catalog().Remove(m, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Catalog().PruneBases(); err != nil {
		t.Fatal(err)
	}
	for _, p := range tree(t, st.Catalog().Root().Data()) {
		if p != "templates" {
			t.Errorf("left under data/ after removing the last template: %s", p)
		}
	}
	// A failed build leaves nothing either: no build directory, lock, base
	// or run/build-* directory.
	in := writeFile(t, t.TempDir(), "broken.sql", "CREATE TABLE a (id INT PRIMARY KEY);\nINSERT INTO nope VALUES (1);\n")
	if _, _, err := st.Build(context.Background(), template.BuildOptions{Name: "broken", FromSQL: in, Profile: mariadb.DefaultProfile()}); err == nil {
		t.Fatal("a broken dump built")
	}
	for _, p := range append(tree(t, st.Catalog().Root().Data()), tree(t, filepath.Join(st.Catalog().Root().Path, "run"))...) {
		if p != "templates" {
			t.Errorf("left behind by a failed build: %s", p)
		}
	}
}

// TestRebuildReplaces: a build under an existing name with new inputs
// replaces the old build, unless a pool uses it.
func TestRebuildReplaces(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	a := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
	b := templatetest.Build(t, st, "app", schema+"INSERT INTO parent VALUES (3, 'c');\n", template.BuildOptions{})
	removed, kept, err := st.Catalog().Supersede(b, func(h string) bool { return false })
	if err != nil || len(removed) != 1 || removed[0].Hash != a.Hash || len(kept) != 0 {
		t.Fatalf("Supersede = removed %v kept %v err %v; want %s removed", removed, kept, err, a.Hash[:12])
	}
	if builds, _ := st.Catalog().Builds("app"); len(builds) != 1 || builds[0].Hash != b.Hash {
		t.Fatalf("builds of app after a rebuild: %v", builds)
	}
	if _, err := os.Stat(filepath.Join(st.Catalog().Root().Data(), "templates", "."+a.Hash+".lock")); !os.IsNotExist(err) {
		t.Errorf("the replaced build's lock file: %v, want it removed", err)
	}
	c := templatetest.Build(t, st, "app", schema+"INSERT INTO parent VALUES (4, 'd');\n", template.BuildOptions{})
	removed, kept, err = st.Catalog().Supersede(c, func(h string) bool { return h == b.Hash })
	if err != nil || len(removed) != 0 || len(kept) != 1 || kept[0].Hash != b.Hash {
		t.Fatalf("Supersede with the old build in use = removed %v kept %v err %v", removed, kept, err)
	}
}
