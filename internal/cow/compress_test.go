package cow_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/diskuse"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/scratch"
	"golang.org/x/sys/unix"
)

// compressedRoot is a root on a zstd btrfs scratch filesystem.
func compressedRoot(t *testing.T) *rootdir.Root {
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
	if _, err := scratch.Up(context.Background(), root, scratch.Options{Size: 512 << 20, Compress: "zstd"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := scratch.Down(context.Background(), root); err != nil {
			t.Errorf("scratch down: %v", err)
		}
	})
	return root
}

// Recompress of a data directory on a compressed btrfs: a file the
// server filled in preallocated space (stored uncompressed) is stored
// compressed after, with the same bytes, holes, owner, mode and times; a
// symlink in the tree is not followed, so a file it points at outside
// stays as it was.
func TestRecompress(t *testing.T) {
	root := compressedRoot(t)
	if c, err := cow.Compression(root.Data()); err != nil || c != "zstd:3" {
		t.Fatalf("Compression = %q, %v; want zstd:3", c, err)
	}
	dir := filepath.Join(root.Data(), "tpl")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "t.ibd")
	data := bytes.Repeat([]byte("a page of rows that compresses well; "), 300000) // ~11 MB
	fd, err := unix.Open(file, unix.O_RDWR|unix.O_CREAT, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(fd, 0, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Pwrite(fd, data, 0); err != nil {
		t.Fatal(err)
	}
	// A hole of 1 MiB in the middle, as page compression punches them.
	if err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 4<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
	unix.Fsync(fd)
	unix.Close(fd)
	copy(data[4<<20:5<<20], make([]byte, 1<<20))
	if err := os.Chown(file, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := os.Chtimes(file, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("not pristine's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	before, err := diskuse.Measure(file)
	if err != nil {
		t.Fatal(err)
	}
	if before.Physical*2 < before.Logical {
		t.Fatalf("a file written into preallocated space is already compressed (%+v): the test needs it stored as written", before)
	}

	done, err := cow.Recompress(dir)
	if err != nil || !done {
		t.Fatalf("Recompress: %v, %v", done, err)
	}
	after, err := diskuse.Measure(file)
	if err != nil {
		t.Fatal(err)
	}
	if after.Physical*4 > after.Logical {
		t.Errorf("after Recompress: %+v; want physical under a quarter of logical (before: %+v)", after, before)
	}
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("content changed by Recompress (%v)", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 4321 || st.Gid != 4321 || st.Mode&0o7777 != 0o640 || time.Unix(st.Mtim.Unix()).UTC() != mtime {
		t.Errorf("after Recompress: uid %d gid %d mode %o mtime %v; want 4321 4321 640 %v", st.Uid, st.Gid, st.Mode&0o7777, time.Unix(st.Mtim.Unix()).UTC(), mtime)
	}
	if hole, err := unix.Seek(mustOpen(t, file), 4<<20, unix.SEEK_HOLE); err != nil || hole != 4<<20 {
		t.Errorf("the hole at 4M: SEEK_HOLE from 4M = %d, %v; want 4M (kept a hole)", hole, err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "not pristine's" {
		t.Errorf("the file a symlink in the tree points at: %q, %v; want it untouched", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "link")); err != nil || l != outside {
		t.Errorf("the symlink: %q, %v; want it kept", l, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the directory after Recompress holds %s; want t.ibd and link, no temporary file", strings.Join(names, ", "))
	}
}

func mustOpen(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// A filesystem without compression is left alone.
func TestRecompressNothingToDo(t *testing.T) {
	if done, err := cow.Recompress(t.TempDir()); err != nil || done {
		t.Errorf("Recompress on %s: %v, %v; want nothing done", os.TempDir(), done, err)
	}
}
