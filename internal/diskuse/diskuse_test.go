package diskuse_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/diskuse"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/scratch"
)

// scratchRoot brings up a 512M btrfs scratch filesystem with the given
// compression on a fresh root.
func scratchRoot(t *testing.T, compress string) *rootdir.Root {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a loop btrfs")
	}
	if _, err := exec.LookPath("mkfs.btrfs"); err != nil {
		t.Skip("mkfs.btrfs is not installed")
	}
	root, err := rootdir.Open(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scratch.Up(context.Background(), root, scratch.Options{Size: 512 << 20, Compress: compress}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := scratch.Down(context.Background(), root); err != nil {
			t.Errorf("scratch down: %v", err)
		}
	})
	return root
}

// writeSynced writes data to path and syncs it, so its extents exist.
func writeSynced(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestCompressedAndShared checks both numbers on a compressed btrfs:
// compressible data takes less than it holds, random data does not, and a
// snapshot adds logical bytes but no physical ones until it is written.
func TestCompressedAndShared(t *testing.T) {
	root := scratchRoot(t, "zstd:3")
	b, err := cow.Detect(root, root.Data())
	if err != nil || b.Name() != "btrfs" {
		t.Fatalf("backend: %v, %v", b, err)
	}
	tpl := filepath.Join(root.Data(), "tpl")
	if err := b.MakeDir(tpl); err != nil {
		t.Fatal(err)
	}
	text := bytes.Repeat([]byte("INSERT INTO t VALUES (1, 'pristine compresses this'); "), 200000) // ~10 MB
	writeSynced(t, filepath.Join(tpl, "text"), text)
	random := make([]byte, 4<<20)
	rand.Read(random)
	writeSynced(t, filepath.Join(tpl, "random"), random)

	u, err := diskuse.Measure(filepath.Join(tpl, "text"))
	if err != nil {
		t.Fatal(err)
	}
	if u.Method != "btrfs extents" || u.Logical != roundUp(len(text)) || u.Physical*4 > u.Logical {
		t.Errorf("compressible file: %+v; want logical %d (whole blocks) and physical under a quarter of it, measured from btrfs extents", u, roundUp(len(text)))
	}
	r, err := diskuse.Measure(filepath.Join(tpl, "random"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Logical != int64(len(random)) || r.Physical < r.Logical {
		t.Errorf("random file: %+v; want physical = logical = %d (btrfs stores what does not compress as it is)", r, len(random))
	}
	one, err := diskuse.Measure(tpl)
	if err != nil {
		t.Fatal(err)
	}

	slot := filepath.Join(root.Data(), "slot")
	if err := b.Clone(tpl, slot); err != nil {
		t.Fatal(err)
	}
	c := diskuse.NewCounter()
	if err := c.Add(tpl); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(slot); err != nil {
		t.Fatal(err)
	}
	if c.Logical != 2*one.Logical || c.Physical != one.Physical {
		t.Errorf("template and its snapshot: %+v; want logical %d (twice) and physical %d (shared extents once)", c.Usage, 2*one.Logical, one.Physical)
	}
	writeSynced(t, filepath.Join(slot, "random"), random[:1<<20])
	w, err := diskuse.Measure(tpl, slot)
	if err != nil {
		t.Fatal(err)
	}
	if w.Physical < one.Physical+1<<20 || w.Physical > one.Physical+2<<20 {
		t.Errorf("after the slot rewrote a 1M random file: physical %d; want the template's %d plus about 1M (the template keeps its own copy)", w.Physical, one.Physical)
	}
}

// roundUp rounds n up to whole 4 KiB blocks, as extents are.
func roundUp(n int) int64 { return int64(n+4095) / 4096 * 4096 }
