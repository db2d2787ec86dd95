package pool

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMarkFiles: the mark holds every file and directory under each
// directory given, by its full path, with a symbolic link marked as the
// link (never followed, so a link to a directory outside adds nothing);
// a missing directory adds nothing; and a file changed in place, made or
// removed shows in the diff.
func TestMarkFiles(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	for _, p := range []string{"db/t.frm", "db/sub/x.CSV", "top.log", filepath.Join(outside, "secret")} {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "db", "link")); err != nil {
		t.Fatal(err)
	}
	m, err := markFiles(dir, filepath.Join(dir, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range m {
		rel, _ := filepath.Rel(dir, p)
		got = append(got, rel)
	}
	slices.Sort(got)
	want := []string{".", "db", "db/link", "db/sub", "db/sub/x.CSV", "db/t.frm", "top.log"}
	if !slices.Equal(got, want) {
		t.Fatalf("marked %q, want %q", got, want)
	}
	if st := m[filepath.Join(dir, "db", "link")]; st.mode&unix.S_IFMT != unix.S_IFLNK {
		t.Errorf("db/link marked with mode %o, want the link itself", st.mode)
	}
	if err := os.WriteFile(filepath.Join(dir, "db", "t.frm"), []byte("longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "db", "planted.frm"), nil, 0o644)
	os.Remove(filepath.Join(dir, "top.log"))
	now, err := markFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := m.diff(now, 10)
	for _, w := range []string{"changed " + filepath.Join(dir, "db", "t.frm"), "new " + filepath.Join(dir, "db", "planted.frm"), "removed " + filepath.Join(dir, "top.log")} {
		if !slices.Contains(d, w) {
			t.Errorf("diff %q lacks %q", d, w)
		}
	}
}

// TestMarkFilesUsed: the bytes a mark adds up under its usage's directory
// are what usedBlocks counts there (the disk cap's base, taken from the
// start's one walk), and nothing outside that directory counts.
func TestMarkFilesUsed(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	for p, n := range map[string]int{"data/db/t.ibd": 200000, "data/db/t.frm": 900, "data/ibdata1": 70000, "clone-id": 50000} {
		p = filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	u := &usage{dir: data}
	if _, err := markFilesUsed(u, dir); err != nil {
		t.Fatal(err)
	}
	if want := usedBlocks(data); u.bytes != want || want == 0 {
		t.Errorf("the mark counted %d bytes under %s, usedBlocks %d", u.bytes, data, want)
	}
}
