// Package templatetest gives tests a template builder and its catalog in a
// fresh pristine root on /dev/shm, removed with every server started under
// it when the test ends.
package templatetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/scratch"
	"github.com/pristinedb/pristine/internal/template"
)

// NewBuilder opens a catalog on backend ("auto" detects; /dev/shm is tmpfs, so
// that means plain copies) in a new root. It skips the test when no server
// is installed, and fails it if a server is left running at the end.
func NewBuilder(t testing.TB, backend string) *template.Builder {
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
	st, err := template.Open(context.Background(), root, backend)
	if err != nil {
		t.Fatal(err)
	}
	// Each test's root has its own base: its time zone tables would cost
	// every test about a second. timezones_test.go turns them on.
	st.NoTimezones = true
	return st
}

// NewScratchBuilder opens a catalog in a new root whose data directory is a
// scratch filesystem of kind fs ("btrfs" or "xfs") of size bytes in RAM,
// as `pristine scratch up` makes it (quotas on). Everything is taken down
// when the test ends. It skips the test when not root or when the mkfs
// tool is missing.
func NewScratchBuilder(t testing.TB, fs string, size int64) *template.Builder {
	t.Helper()
	return NewScratchBuilderWith(t, scratch.Options{FS: fs, Size: size})
}

// NewScratchBuilderWith is NewScratchBuilder with the scratch filesystem
// opt describes (in /dev/shm whatever opt.Dir says): compressed, for one.
func NewScratchBuilderWith(t testing.TB, opt scratch.Options) *template.Builder {
	t.Helper()
	mariadbtest.Binary(t)
	fs := opt.FS
	if fs == "" {
		fs = "btrfs"
	}
	if os.Geteuid() != 0 {
		t.Skipf("a %s scratch filesystem needs root", fs)
	}
	if _, err := exec.LookPath("mkfs." + fs); err != nil {
		t.Skipf("mkfs.%s is not installed", fs)
	}
	dir, err := mariadbtest.TempDir("/dev/shm", "pristine-scratch-test-")
	if err != nil {
		t.Fatal(err)
	}
	root, err := rootdir.Open(filepath.Join(dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	opt.Dir = "/dev/shm"
	if _, err := scratch.Up(context.Background(), root, opt); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if k := mariadb.KillOrphans(dir); len(k) > 0 {
			t.Errorf("servers left running: %v", k)
		}
		if _, err := scratch.Down(context.Background(), root); err != nil {
			t.Errorf("scratch down: %v", err)
		}
		os.RemoveAll(dir)
	})
	st, err := template.Open(context.Background(), root, "auto")
	if err != nil {
		t.Fatal(err)
	}
	st.NoTimezones = true // as in NewBuilder
	return st
}

// Build builds template name from SQL text, with the default profile.
func Build(t testing.TB, st *template.Builder, name, sqlText string, opt template.BuildOptions) *catalog.Meta {
	t.Helper()
	in := filepath.Join(st.Catalog().Root().Path, name+".sql")
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
