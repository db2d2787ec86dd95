package exportmeta_test

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/exportmeta"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// Export packs one .cfg per InnoDB table across batches, leaves none in
// the data directory, and a failed export (a table dropped under it)
// leaves no pack behind, not even a partial one.
func TestExport(t *testing.T) {
	in := mariadbtest.Start(t)
	db := mariadbtest.Open(t, in, "")
	stmts := []string{"CREATE DATABASE app"}
	n := exportmeta.Batch + 3
	for i := range n {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE app.t%d (id INT PRIMARY KEY, v INT, KEY ix_v (v)) ENGINE=InnoDB", i))
	}
	stmts = append(stmts, "CREATE TABLE app.m (id INT PRIMARY KEY) ENGINE=MyISAM", "CREATE TABLE app.`odd name` (id INT PRIMARY KEY) ENGINE=InnoDB")
	mariadbtest.Exec(t, db, stmts...)
	dir := filepath.Join(t.TempDir(), exportmeta.Dir)
	if err := exportmeta.Export(context.Background(), db, in.Config.Datadir, dir); err != nil {
		t.Fatal(err)
	}
	if !exportmeta.Complete(dir) {
		t.Fatal("no pack after a successful export")
	}
	set, err := exportmeta.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != n {
		t.Errorf("%d tables in the pack, want %d (the InnoDB tables with plain names)", set.Len(), n)
	}
	if cfg, ok := set.Get("app", "t0"); !ok || len(cfg) == 0 {
		t.Error("no metadata for app.t0")
	}
	if left, _ := filepath.Glob(filepath.Join(in.Config.Datadir, "app", "*.cfg")); len(left) > 0 {
		t.Errorf(".cfg files left in the data directory: %v", left)
	}

	// A cancelled export leaves nothing to mistake for a complete one.
	dir2 := filepath.Join(t.TempDir(), exportmeta.Dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := exportmeta.Export(ctx, db, in.Config.Datadir, dir2); err == nil {
		t.Fatal("a cancelled export succeeded")
	}
	if ents, _ := os.ReadDir(dir2); exportmeta.Complete(dir2) || len(ents) > 0 {
		t.Errorf("a failed export left %d entries in %s", len(ents), dir2)
	}
}

// Read refuses a pack with anything but plain db/table.cfg entries.
func TestReadRefusesForeignEntries(t *testing.T) {
	for _, name := range []string{"../../etc/passwd.cfg", "app/t.ibd", "app/sub/t.cfg", "/abs/t.cfg", "app/t 1.cfg"} {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, exportmeta.Pack))
		if err != nil {
			t.Fatal(err)
		}
		tw := tar.NewWriter(f)
		body := "x"
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
		tw.Close()
		f.Close()
		if _, err := exportmeta.Read(dir); err == nil || !strings.Contains(err.Error(), "unexpected entry") {
			t.Errorf("entry %q: err %v, want it refused", name, err)
		}
	}
}
