package pool

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// settledFiles is markFiles(dir) with every directory marked settled, as
// a mark taken settleAge after the tree's last change would be.
func settledFiles(t testing.TB, dir string) fileMark {
	t.Helper()
	m, err := markFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for p, st := range m {
		if st.mode&unix.S_IFMT == unix.S_IFDIR {
			st.settled = true
			m[p] = st
		}
	}
	return m
}

// TestRemark: a walk again of a mark's directories finds what a whole
// walk finds (the same diff) for every kind of change, though it lists
// no settled directory that did not change and looks at no file a
// storage engine rewrites there; a directory changed less than settleAge
// before the mark is listed again, which a change in the same tick as
// the mark needs.
func TestRemark(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(dir string) error
		want   string // a line of the diff; "" for none
	}{
		{"nothing", func(string) error { return nil }, ""},
		{"an engine file written in place", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "db/t.ibd"), []byte("rows rows"), 0o644)
		}, ""},
		{"a file planted", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "db/planted.frm"), nil, 0o644)
		}, "new db/planted.frm"},
		{"a file planted deeper", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "db/sub/planted.CSV"), nil, 0o644)
		}, "new db/sub/planted.CSV"},
		{"a file changed in place", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "db/t.frm"), []byte("other"), 0o644)
		}, "changed db/t.frm"},
		{"an engine file replaced", func(dir string) error {
			tmp := filepath.Join(dir, "db/new.tmp")
			if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, filepath.Join(dir, "db/t.ibd"))
		}, "replaced db/t.ibd"},
		{"a file removed", func(dir string) error { return os.Remove(filepath.Join(dir, "top.log")) }, "removed top.log"},
		{"a file planted, its directory's times put back", func(dir string) error {
			d := filepath.Join(dir, "db/sub")
			var st unix.Stat_t
			if err := unix.Lstat(d, &st); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d, "planted.frm"), nil, 0o644); err != nil {
				return err
			}
			return unix.UtimesNanoAt(unix.AT_FDCWD, d, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
		}, "new db/sub/planted.frm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, body := range map[string]string{"db/t.frm": "frm", "db/t.ibd": "rows", "db/sub/x.CSV": "x", "top.log": "log"} {
				p = filepath.Join(dir, p)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m := settledFiles(t, dir)
			if err := tc.change(dir); err != nil {
				t.Fatal(err)
			}
			again, err := m.remark(dir)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := markFiles(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, want := m.diff(again, 10), m.diff(whole, 10)
			if !slices.Equal(got, want) {
				t.Fatalf("the walk again found %q, the whole walk %q", got, want)
			}
			if tc.want == "" && len(got) > 0 || tc.want != "" && !slices.Contains(got, strings.Replace(tc.want, " ", " "+dir+"/", 1)) {
				t.Fatalf("diff %q, want %q", got, tc.want)
			}
			if tc.want == "" {
				// The engine file in a settled directory is taken from the
				// mark, not looked at (its write in place moved its size).
				ibd := filepath.Join(dir, "db/t.ibd")
				if again[ibd] != m[ibd] {
					t.Errorf("db/t.ibd looked at again in a settled directory: %+v, was %+v", again[ibd], m[ibd])
				}
			}
		})
	}

	// A file made in the same tick as the mark's look at its directory:
	// the directory's times are the mark's. Only a directory not settled
	// is listed again, so only that mark sees the file.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "planted.frm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, settled := range []bool{false, true} {
		m, err := markFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m[dir].settled {
			t.Fatalf("a directory changed just now is marked settled")
		}
		delete(m, filepath.Join(dir, "planted.frm"))
		st := m[dir]
		st.settled = settled
		m[dir] = st
		again, err := m.remark(dir)
		if err != nil {
			t.Fatal(err)
		}
		found := slices.Contains(m.diff(again, 10), "new "+filepath.Join(dir, "planted.frm"))
		if found == settled {
			t.Errorf("a directory marked settled=%v: the file made in its last tick found=%v, want %v", settled, found, !settled)
		}
	}
}

// BenchmarkWalk: a whole walk of a slot-like tree (five databases of 60
// tables, a .frm and an .ibd each) against a walk again of it, settled
// and unchanged (docs/architecture.md, "release --unchanged").
func BenchmarkWalk(b *testing.B) {
	dir := b.TempDir()
	for d := range 5 {
		for i := range 60 {
			for _, ext := range []string{".frm", ".ibd"} {
				p := filepath.Join(dir, fmt.Sprintf("db%d/t%d%s", d, i, ext))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	m := settledFiles(b, dir)
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			if _, err := markFiles(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("again", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.remark(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
}
