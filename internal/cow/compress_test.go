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
		if _, err := scratch.Down(context.Background(), root); err != nil {
			t.Errorf("scratch down: %v", err)
		}
	})
	return root
}

// Recompress of a data directory on a compressed btrfs: a schema's file
// the server filled in preallocated space (stored uncompressed) is stored
// compressed after, with the same bytes, holes, owner, mode and times,
// and marked so that its clones' writes are not compressed; the server's
// own files stay as written; a symlink in the tree is not followed, so a
// file it points at outside stays as it was.
func TestRecompress(t *testing.T) {
	root := compressedRoot(t)
	if c, err := cow.Compression(root.Data()); err != nil || c != "zstd:3" {
		t.Fatalf("Compression = %q, %v; want zstd:3", c, err)
	}
	dir := filepath.Join(root.Data(), "tpl")
	fs := cow.NewBtrfs(root)
	if err := fs.MakeDir(dir); err != nil { // a template, which slots snapshot
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "app", "t.ibd")
	// The server's own file, which every slot reads as it starts: kept as
	// the server wrote it.
	system := filepath.Join(dir, "ibdata1")
	sfd, err := unix.Open(system, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	sdata := bytes.Repeat([]byte("system tablespace "), 100000)
	if err := unix.Fallocate(sfd, 0, 0, int64(len(sdata))); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Pwrite(sfd, sdata, 0); err != nil {
		t.Fatal(err)
	}
	unix.Fsync(sfd)
	unix.Close(sfd)
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
	if err := os.Symlink(outside, filepath.Join(dir, "app", "link")); err != nil {
		t.Fatal(err)
	}
	before, err := diskuse.Measure(file)
	if err != nil {
		t.Fatal(err)
	}
	if before.Physical*2 < before.Logical {
		t.Fatalf("a file written into preallocated space is already compressed (%+v): the test needs it stored as written", before)
	}

	done, err := cow.Recompress(dir, func(rel string) bool { return rel == "ibdata1" })
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
	if sys, err := diskuse.Measure(system); err != nil || sys.Physical < sys.Logical {
		t.Errorf("the server's ibdata1 after Recompress: %+v, %v; want it stored as written", sys, err)
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
	if l, err := os.Readlink(filepath.Join(dir, "app", "link")); err != nil || l != outside {
		t.Errorf("the symlink: %q, %v; want it kept", l, err)
	}
	// The template's files keep their compressed bytes, but a slot's
	// writes over them are stored as written (FS_NOCOMP_FL, which
	// snapshots carry): a slot pays no compression on its writes.
	if flags, err := unix.IoctlGetInt(mustOpen(t, file), unix.FS_IOC_GETFLAGS); err != nil || flags&0x400 == 0 {
		t.Errorf("after Recompress: file flags %#x, %v; want FS_NOCOMP_FL (0x400)", flags, err)
	}
	slot := filepath.Join(root.Data(), "slot")
	if err := fs.Clone(dir, slot); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Remove(slot) })
	clone := filepath.Join(slot, "app", "t.ibd")
	cfd, err := unix.Open(clone, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cfd)
	if _, err := unix.Pwrite(cfd, data[:4<<20], 6<<20); err != nil {
		t.Fatal(err)
	}
	unix.Syncfs(cfd) // committed: diskuse reads the filesystem's trees
	if cl, err := diskuse.Measure(clone); err != nil || cl.Physical < after.Physical+3<<20 {
		t.Errorf("a clone with 4 MiB of compressible data written over it: %+v, %v; want at least 3 MiB more physical than the template's file (%d): stored as written", cl, err, after.Physical)
	}
	if err := fs.Remove(slot); err != nil {
		t.Error(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "app")); len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the schema's directory after Recompress holds %s; want t.ibd and link, no temporary file", strings.Join(names, ", "))
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
	if done, err := cow.Recompress(t.TempDir(), nil); err != nil || done {
		t.Errorf("Recompress on %s: %v, %v; want nothing done", os.TempDir(), done, err)
	}
}
