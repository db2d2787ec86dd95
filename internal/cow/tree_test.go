package cow

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sparseSize is the apparent size of the sparse file in the test tree; it
// holds only two 4 KiB blocks of data.
const sparseSize = 64 << 20

// makeTree fills the existing directory dir with a small tree that covers
// everything Clone promises to keep: contents, empty and sparse files, modes,
// owners, times, nested and read-only directories, and symlinks.
func makeTree(tb testing.TB, dir string) {
	tb.Helper()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "db1", "sub"), 0o750))
	must(os.Mkdir(filepath.Join(dir, "ro"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "ibdata1"), bytes.Repeat([]byte("innodb page "), 50000), 0o660))
	must(os.WriteFile(filepath.Join(dir, "db1", "t.frm"), []byte("frm"), 0o640))
	must(os.WriteFile(filepath.Join(dir, "db1", "sub", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600))
	must(os.WriteFile(filepath.Join(dir, "ro", "file"), []byte("read-only dir"), 0o444))
	f, err := os.Create(filepath.Join(dir, "sparse"))
	must(err)
	_, err = f.WriteAt(bytes.Repeat([]byte{7}, 4096), 1<<20)
	must(err)
	_, err = f.WriteAt(bytes.Repeat([]byte{9}, 4096), 32<<20)
	must(err)
	must(f.Truncate(sparseSize))
	must(f.Close())
	must(os.Symlink("ibdata1", filepath.Join(dir, "link")))
	must(os.Symlink("../nowhere", filepath.Join(dir, "db1", "dangling")))
	if os.Geteuid() == 0 {
		must(os.Lchown(filepath.Join(dir, "db1", "t.frm"), 1234, 5678))
		must(os.Lchown(filepath.Join(dir, "db1", "dangling"), 1234, 5678))
		must(os.Chown(filepath.Join(dir, "db1"), 1234, 5678))
	}
	past := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, p := range []string{"ibdata1", "db1/t.frm", "sparse", "ro/file", "db1/sub", "ro", "db1"} {
		must(os.Chtimes(filepath.Join(dir, p), past, past))
	}
	ts := []unix.Timespec{unix.NsecToTimespec(past.UnixNano()), unix.NsecToTimespec(past.UnixNano())}
	must(unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(dir, "link"), ts, unix.AT_SYMLINK_NOFOLLOW))
	must(os.Chmod(filepath.Join(dir, "ro"), 0o555))
	// Without root, the test's own cleanup could not empty it.
	tb.Cleanup(func() { os.Chmod(filepath.Join(dir, "ro"), 0o755) })
}

// entry is what compareTrees looks at for one path.
type entry struct {
	mode        fs.FileMode
	uid, gid    uint32
	mtime       int64
	size        int64
	content     string // file contents, or symlink target
	allocBlocks int64
}

// scanTree reads every entry below dir (the top itself as ".").
func scanTree(tb testing.TB, dir string) map[string]entry {
	tb.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{mode: info.Mode(), uid: st.Uid, gid: st.Gid, mtime: st.Mtim.Nano(), allocBlocks: st.Blocks}
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.size, e.content = int64(len(b)), fmt.Sprintf("%x", sha256.Sum256(b))
		case info.Mode()&fs.ModeSymlink != 0:
			e.content, err = os.Readlink(p)
			if err != nil {
				return err
			}
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		tb.Fatalf("scan %s: %v", dir, err)
	}
	return out
}

// compareTrees fails the test where the trees at a and b differ in what Clone
// keeps.
func compareTrees(t *testing.T, a, b string) {
	t.Helper()
	ta, tb := scanTree(t, a), scanTree(t, b)
	if len(ta) != len(tb) {
		t.Errorf("source has %d entries, clone %d", len(ta), len(tb))
	}
	for p, ea := range ta {
		eb, ok := tb[p]
		if !ok {
			t.Errorf("%s: missing in the clone", p)
			continue
		}
		if ea.mode != eb.mode || ea.uid != eb.uid || ea.gid != eb.gid {
			t.Errorf("%s: mode/owner %v %d:%d, clone %v %d:%d", p, ea.mode, ea.uid, ea.gid, eb.mode, eb.uid, eb.gid)
		}
		if ea.mtime != eb.mtime {
			t.Errorf("%s: mtime %d, clone %d", p, ea.mtime, eb.mtime)
		}
		if ea.size != eb.size || ea.content != eb.content {
			t.Errorf("%s: contents differ (size %d, clone %d)", p, ea.size, eb.size)
		}
	}
}
