package cow

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// A build staged on tmpfs from a base in the store, then changed every
// way a server changes a data directory, comes back into the store by
// CopyInOver as CopyIn would bring it: the same bytes, holes, modes, owners
// and times; the base is left as it was.
func TestCopyInOver(t *testing.T) {
	forEachBackend(t, func(t *testing.T, root *rootdir.Root, b Backend) {
		base := source(t, root, b)
		outside := t.TempDir()
		pristine := filepath.Join(outside, "base-as-made")
		if err := CopyTree(base, pristine, nil); err != nil {
			t.Fatal(err)
		}
		src := filepath.Join(outside, "build")
		if err := CopyTree(base, src, nil); err != nil {
			t.Fatal(err)
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		// A block rewritten in the middle, a file grown and one cut short.
		writeAt(t, filepath.Join(src, "ibdata1"), "changed page", 300000)
		f, err := os.OpenFile(filepath.Join(src, "db1", "t.frm"), os.O_APPEND|os.O_WRONLY, 0)
		must(err)
		_, err = f.Write(bytes.Repeat([]byte("x"), 200000))
		must(err)
		must(f.Close())
		must(os.Truncate(filepath.Join(src, "db1", "sub", "run.sh"), 3))
		// The sparse file: its data at 1 MiB punched out, new data at 8 MiB.
		sfd, err := unix.Open(filepath.Join(src, "sparse"), unix.O_RDWR, 0)
		must(err)
		must(unix.Fallocate(sfd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 1<<20, 4096))
		_, err = unix.Pwrite(sfd, []byte("new"), 8<<20)
		must(err)
		unix.Close(sfd)
		// Zeros written over data, and a new file of data, zeros, data.
		writeAt(t, filepath.Join(src, "ibdata1"), string(make([]byte, 3*4096+100)), 100000)
		mixed := append(append(bytes.Repeat([]byte("page"), 5000), make([]byte, 70000)...), bytes.Repeat([]byte("tail"), 3000)...)
		must(os.WriteFile(filepath.Join(src, "db1", "mixed.ibd"), mixed, 0o660))
		// Files and directories added and removed, a mode and a link changed.
		must(os.MkdirAll(filepath.Join(src, "db2", "deep"), 0o750))
		must(os.WriteFile(filepath.Join(src, "db2", "deep", "t2.ibd"), bytes.Repeat([]byte("ibd"), 70000), 0o660))
		must(os.Remove(filepath.Join(src, "empty")))
		must(os.Chmod(filepath.Join(src, "ro"), 0o755))
		must(os.RemoveAll(filepath.Join(src, "ro")))
		must(os.Chmod(filepath.Join(src, "ibdata1"), 0o600))
		must(os.Remove(filepath.Join(src, "link")))
		must(os.Symlink("db2", filepath.Join(src, "link")))
		must(os.Mkdir(filepath.Join(src, "was-a-file"), 0o700))
		must(os.WriteFile(filepath.Join(src, "db1", "dangling2"), []byte("a file where a link was"), 0o600))

		dst := filepath.Join(root.Data(), "in")
		if err := CopyInOver(b, base, src, dst); err != nil {
			t.Fatalf("CopyInOver: %v", err)
		}
		compareTrees(t, src, dst)
		compareTrees(t, pristine, base)
		if b.Name() == "btrfs" && !isSubvol(dst) {
			t.Errorf("CopyInOver on btrfs made no subvolume at %s", dst)
		}
		if err := CopyInOver(b, base, src, dst); err == nil {
			t.Errorf("CopyInOver onto an existing tree succeeded")
		}
		// Without its base (pruned, say) it copies every byte.
		dst2 := filepath.Join(root.Data(), "in2")
		if err := CopyInOver(b, filepath.Join(root.Data(), "gone"), src, dst2); err != nil {
			t.Fatalf("CopyInOver without a base: %v", err)
		}
		compareTrees(t, src, dst2)
	})
}
