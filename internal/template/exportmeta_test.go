package template_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/exportmeta"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// A build, in RAM or on the store, files the export metadata of its
// InnoDB tables beside the template's data, root's only, and leaves no
// .cfg in the data. (A failed build's staging directory, metadata and
// all, goes: TestBuildInRAMLeavesNothing.)
func TestBuildExportsMeta(t *testing.T) {
	const sql = "CREATE TABLE a (id INT PRIMARY KEY, v INT, KEY ix (v)) ENGINE=InnoDB;\nCREATE TABLE b (id INT PRIMARY KEY) ENGINE=InnoDB;\nCREATE TABLE c (id INT PRIMARY KEY) ENGINE=MyISAM;\n"
	for _, inRAM := range []bool{true, false} {
		name := map[bool]string{true: "in RAM", false: "on the store"}[inRAM]
		t.Run(name, func(t *testing.T) {
			st, ram, log := ramBuilder(t)
			st.RAM.Off = !inRAM
			m := templatetest.Build(t, st, "app", sql, template.BuildOptions{})
			dir := filepath.Join(st.Catalog().Dir(m.Hash), exportmeta.Dir)
			set, err := exportmeta.Read(dir)
			if err != nil {
				t.Fatalf("no export metadata beside the template (%v); progress:\n%s", err, log())
			}
			for _, tb := range []string{"a", "b"} {
				if _, ok := set.Get("app", tb); !ok {
					t.Errorf("no export metadata for app.%s", tb)
				}
			}
			if set.Len() != 2 {
				t.Errorf("metadata of %d tables, want 2 (the InnoDB ones)", set.Len())
			}
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: want mode 0700 (%v)", dir, err)
			}
			if left, _ := filepath.Glob(filepath.Join(st.Catalog().DataDir(m.Hash), "app", "*.cfg")); len(left) > 0 {
				t.Errorf(".cfg files left in the template's data: %v", left)
			}
			assertEmpty(t, ram, "after the build")
		})
	}
}
