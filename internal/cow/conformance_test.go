package cow

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/rootdir"
)

// backendCase is one backend on one kind of filesystem.
type backendCase struct {
	name string
	fs   string // loopFS kind
	make func(*rootdir.Root) Backend
}

// backendCases is the table every conformance test runs against.
var backendCases = []backendCase{
	{"btrfs", "btrfs", func(r *rootdir.Root) Backend { return NewBtrfs(r) }},
	{"reflink-on-xfs", "xfs", func(r *rootdir.Root) Backend { return NewReflink(r) }},
	{"reflink-on-btrfs", "btrfs", func(r *rootdir.Root) Backend { return NewReflink(r) }},
	{"copy-on-ext4", "ext4", func(r *rootdir.Root) Backend { return NewCopy(r) }},
	{"copy-on-tmpfs", "tmpfs", func(r *rootdir.Root) Backend { return NewCopy(r) }},
	{"copy-in-tempdir", "dir", func(r *rootdir.Root) Backend { return NewCopy(r) }},
}

// forEachBackend runs f once per backend case, each on a fresh filesystem.
func forEachBackend(t *testing.T, f func(t *testing.T, root *rootdir.Root, b Backend)) {
	for _, c := range backendCases {
		t.Run(c.name, func(t *testing.T) {
			root := loopFS(t, c.fs, 512)
			f(t, root, c.make(root))
		})
	}
}

// source makes a tree to clone with MakeDir and makeTree.
func source(t *testing.T, root *rootdir.Root, b Backend) string {
	t.Helper()
	src := filepath.Join(root.Data(), "template")
	if err := b.MakeDir(src); err != nil {
		t.Fatalf("MakeDir: %v", err)
	}
	makeTree(t, src)
	return src
}

func TestConformance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, root *rootdir.Root, b Backend) {
		src := source(t, root, b)
		dst := filepath.Join(root.Data(), "slot1")
		if err := b.Clone(src, dst); err != nil {
			t.Fatalf("Clone: %v", err)
		}
		compareTrees(t, src, dst)
		if b.Name() == "btrfs" && !isSubvol(dst) {
			t.Errorf("btrfs clone %s is not a subvolume", dst)
		}

		t.Run("sparse", func(t *testing.T) {
			st, err := lstat(filepath.Join(dst, "sparse"))
			if err != nil {
				t.Fatal(err)
			}
			if st.Size != sparseSize || st.Blocks*512 >= 1<<20 {
				t.Errorf("sparse file in the clone: size %d, %d bytes allocated; want %d, under 1 MiB", st.Size, st.Blocks*512, sparseSize)
			}
		})

		t.Run("independent", func(t *testing.T) {
			// Write into the clone: the source keeps its bytes, and the other way round.
			writeAt(t, filepath.Join(dst, "ibdata1"), "CLONE", 100)
			writeAt(t, filepath.Join(src, "db1", "t.frm"), "SRC", 0)
			if err := os.WriteFile(filepath.Join(dst, "new"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := readAt(t, filepath.Join(src, "ibdata1"), 100, 5); got == "CLONE" {
				t.Error("a write to the clone shows in the source")
			}
			if got := readAt(t, filepath.Join(dst, "db1", "t.frm"), 0, 3); got != "frm" {
				t.Errorf("clone's t.frm = %q after a write to the source; want frm", got)
			}
			if _, err := os.Stat(filepath.Join(src, "new")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file created in the clone shows in the source: %v", err)
			}
		})

		t.Run("clone of a clone", func(t *testing.T) {
			dst2 := filepath.Join(root.Data(), "slot2")
			if err := b.Clone(dst, dst2); err != nil {
				t.Fatalf("Clone: %v", err)
			}
			compareTrees(t, dst, dst2)
		})

		t.Run("remove", func(t *testing.T) {
			for _, p := range []string{dst, filepath.Join(root.Data(), "slot2")} {
				if err := b.Remove(p); err != nil {
					t.Fatalf("Remove %s: %v", p, err)
				}
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s still exists after Remove: %v", p, err)
				}
			}
			if err := b.Remove(dst); err != nil {
				t.Errorf("Remove of a missing path: %v; want nil", err)
			}
			if _, err := os.Stat(filepath.Join(src, "ibdata1")); err != nil {
				t.Errorf("source damaged by removing its clone: %v", err)
			}
		})
	})
}

func TestCloneRefuses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, root *rootdir.Root, b Backend) {
		src := source(t, root, b)
		existing := filepath.Join(root.Data(), "existing")
		if err := os.Mkdir(existing, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(existing, "keep"), []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(root.Data(), filepath.Join(root.Path, "via-link")); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, dst string
			want      error
		}{
			{"existing destination", existing, ErrExist},
			{"outside the root", filepath.Join(filepath.Dir(root.Path), "outside"), rootdir.ErrOutside},
			{"dot-dot", filepath.Join(root.Data(), "..", "..", "escape"), rootdir.ErrOutside},
			{"through a symlink", filepath.Join(root.Path, "via-link", "slot"), rootdir.ErrOutside},
			{"the data directory", root.Data(), rootdir.ErrOutside},
		} {
			t.Run(c.name, func(t *testing.T) {
				if err := b.Clone(src, c.dst); !errors.Is(err, c.want) {
					t.Errorf("Clone to %s: %v; want %v", c.dst, err, c.want)
				}
				if c.want != rootdir.ErrOutside {
					return
				}
				if err := b.Remove(c.dst); !errors.Is(err, c.want) {
					t.Errorf("Remove %s: %v; want %v", c.dst, err, c.want)
				}
			})
		}
		if b, err := os.ReadFile(filepath.Join(existing, "keep")); err != nil || string(b) != "keep" {
			t.Errorf("existing destination changed: %q, %v", b, err)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(root.Path), "outside")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Clone created something outside the root: %v", err)
		}
	})
}

func TestCloneFailureLeavesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, root *rootdir.Root, b Backend) {
		// A plain directory as source makes every backend walk the tree
		// (btrfs reflinks into a new subvolume), so the hook can fail it
		// half-way.
		src := filepath.Join(root.Data(), "plain")
		if err := os.Mkdir(src, 0o755); err != nil {
			t.Fatal(err)
		}
		makeTree(t, src)
		testHookFile = func(rel string) error {
			if rel == "sparse" {
				return errors.New("injected failure")
			}
			return nil
		}
		t.Cleanup(func() { testHookFile = nil })
		dst := filepath.Join(root.Data(), "slot")
		err := b.Clone(src, dst)
		if err == nil || !strings.Contains(err.Error(), "injected failure") {
			t.Fatalf("Clone: %v; want the injected failure", err)
		}
		if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("failed Clone left %s behind: %v", dst, err)
		}
	})
}

// TestCloneFullFilesystem clones with the copy backend into a filesystem too
// small for the tree: the error names the cause and the fix, and nothing is
// left at the destination.
func TestCloneFullFilesystem(t *testing.T) {
	root := loopFS(t, "tmpfs", 2)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "big"), bytes.Repeat([]byte("x"), 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root.Data(), "slot")
	err := NewCopy(root).Clone(src, dst)
	if err == nil || !strings.Contains(err.Error(), "is full") || !strings.Contains(err.Error(), "scratch up --size") {
		t.Fatalf("Clone into a full filesystem: %v; want an error saying it is full and how to fix it", err)
	}
	if strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("error spans several lines: %q", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed Clone left %s behind: %v", dst, err)
	}
}

func writeAt(t *testing.T, path, s string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(s), off); err != nil {
		t.Fatal(err)
	}
}

func readAt(t *testing.T, path string, off int64, n int) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCloneAsOwner: a clone given to an owner lets the owner write every
// file: each belongs to it, or, left as it was, to the owner's shared
// group with group read-write. On btrfs, whose snapshot keeps the source's
// inodes, a shared file's metadata is not written at all (its ctime is the
// source's), so its leaf stays the template's; the other backends make new
// files and give each to the owner.
func TestCloneAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a clone to an owner chowns: needs root")
	}
	const shared = 4242
	own := &Owner{UID: 4321, GID: 4321, Shared: shared}
	forEachBackend(t, func(t *testing.T, root *rootdir.Root, b Backend) {
		src := source(t, root, b)
		if err := os.Lchown(filepath.Join(src, "ibdata1"), 0, shared); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(src, "ibdata1"), 0o660); err != nil {
			t.Fatal(err)
		}
		// Of the group, but not writable by it: given to the owner.
		if err := os.Lchown(filepath.Join(src, "empty"), 0, shared); err != nil {
			t.Fatal(err)
		}
		srcSt, err := lstat(filepath.Join(src, "ibdata1"))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root.Data(), "slot1")
		if err := CloneAs(b, src, dst, own); err != nil {
			t.Fatalf("CloneAs: %v", err)
		}
		for p, e := range scanTree(t, dst) {
			mine := int(e.uid) == own.UID && int(e.gid) == own.GID
			viaGroup := int(e.gid) == shared && e.mode&0o060 == 0o060
			if !mine && !viaGroup {
				t.Errorf("%s: %v %d:%d, want the owner's %d:%d or group %d read-write", p, e.mode, e.uid, e.gid, own.UID, own.GID, shared)
			}
		}
		st, err := lstat(filepath.Join(dst, "ibdata1"))
		if err != nil {
			t.Fatal(err)
		}
		// Chowned from a list read once from the source: the same owners
		// as the walk gave, entry by entry.
		chowns, err := ListChowns(src, shared)
		if err != nil {
			t.Fatal(err)
		}
		listed := filepath.Join(root.Data(), "slot2")
		if err := CloneAs(b, src, listed, &Owner{UID: own.UID, GID: own.GID, Shared: shared, Chowns: chowns}); err != nil {
			t.Fatalf("CloneAs with the source's chowns: %v", err)
		}
		walked, got := scanTree(t, dst), scanTree(t, listed)
		if len(got) != len(walked) {
			t.Errorf("the listed clone has %d entries, the walked one %d", len(got), len(walked))
		}
		for p, w := range walked {
			if g, ok := got[p]; !ok || g.uid != w.uid || g.gid != w.gid || g.mode != w.mode {
				t.Errorf("%s: %v %d:%d chowned from the list, %v %d:%d by the walk", p, g.mode, g.uid, g.gid, w.mode, w.uid, w.gid)
			}
		}
		if b.Name() == "btrfs" {
			if int(st.Gid) != shared || st.Ctim != srcSt.Ctim {
				t.Errorf("btrfs: the shared file was written: gid %d ctime %v, source's %v; want group %d and the source's ctime", st.Gid, st.Ctim, srcSt.Ctim, shared)
			}
			if d, _ := lstat(filepath.Join(dst, "db1")); d == nil || int(d.Uid) != own.UID {
				t.Error("btrfs: a directory of the clone was left to its source's owner")
			}
		}
	})
}
