package cow

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/rootdir"
)

// A tree built outside the store (a build's tmpfs staging directory) is
// copied into it as a tree the backend made: on btrfs a subvolume, which
// then clones by snapshot; CopyTree copies it out again.
func TestCopyInAndCopyTree(t *testing.T) {
	forEachBackend(t, func(t *testing.T, root *rootdir.Root, b Backend) {
		outside := t.TempDir()
		src := filepath.Join(outside, "src")
		if err := os.Mkdir(src, 0o700); err != nil {
			t.Fatal(err)
		}
		makeTree(t, src)
		dst := filepath.Join(root.Data(), "in")
		if err := CopyIn(b, src, dst); err != nil {
			t.Fatalf("CopyIn: %v", err)
		}
		compareTrees(t, src, dst)
		if b.Name() == "btrfs" && !isSubvol(dst) {
			t.Errorf("CopyIn on btrfs made no subvolume at %s", dst)
		}
		if err := CopyIn(b, src, dst); err == nil {
			t.Errorf("CopyIn onto an existing tree succeeded")
		}
		clone := filepath.Join(root.Data(), "clone")
		if err := b.Clone(dst, clone); err != nil {
			t.Fatalf("Clone of the copied tree: %v", err)
		}
		compareTrees(t, src, clone)
		out := filepath.Join(outside, "out")
		if err := CopyTree(dst, out, nil); err != nil {
			t.Fatalf("CopyTree: %v", err)
		}
		compareTrees(t, src, out)
		if err := CopyTree(dst, out, nil); err == nil {
			t.Errorf("CopyTree onto an existing tree succeeded")
		}
	})
}
