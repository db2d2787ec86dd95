// Package templatetest gives tests a template store in a fresh pristine
// root on /dev/shm, removed with every server started under it when the
// test ends.
package templatetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/template"
)

// NewStore opens a store on backend ("auto" detects; /dev/shm is tmpfs, so
// that means plain copies) in a new root. It skips the test when no server
// is installed, and fails it if a server is left running at the end.
func NewStore(t testing.TB, backend string) *template.Store {
	t.Helper()
	mariadbtest.Binary(t)
	dir := "/dev/shm"
	if _, err := os.Stat(dir); err != nil {
		dir = os.TempDir()
	}
	dir, err := mariadbtest.TempDir(dir, "pristine-store-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if k := mariadb.KillOrphans(dir); len(k) > 0 {
			t.Errorf("servers left running: %v", k)
		}
		os.RemoveAll(dir)
	})
	root, err := rootdir.Open(filepath.Join(dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := template.NewStore(context.Background(), root, backend)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Build builds template name from SQL text, with the default profile.
func Build(t testing.TB, st *template.Store, name, sqlText string, opt template.BuildOptions) *template.Meta {
	t.Helper()
	in := filepath.Join(st.Root.Path, name+".sql")
	if err := os.WriteFile(in, []byte(sqlText), 0o644); err != nil {
		t.Fatal(err)
	}
	opt.Name, opt.FromSQL = name, in
	if opt.Profile.LogFileSize == 0 {
		opt.Profile = mariadb.DefaultProfile()
	}
	m, _, err := st.Build(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
