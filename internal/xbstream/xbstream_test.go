package xbstream

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

func extract(t *testing.T, stream []byte) (string, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	_, err := Extract(context.Background(), bytes.NewReader(stream), out, Options{Threads: 3})
	return out, err
}

func TestExtractPayloadAndSparse(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Chunk = 1000
	big := bytes.Repeat([]byte("0123456789abcdef"), 700)
	if err := w.WriteFile("db/t1.ibd", big); err != nil {
		t.Fatal(err)
	}
	w.WriteFile("empty", nil)
	// Sparse: 3 bytes at 0, skip 5, 2 bytes, then a 10-byte trailing hole.
	w.Sparse("db/s.ibd", 0, []uint32{0, 3, 5, 2, 10, 0}, []byte("abcde"))
	w.EOF("db/s.ibd")
	out, err := extract(t, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, "db/t1.ibd"))
	if !bytes.Equal(got, big) {
		t.Errorf("t1.ibd: %d bytes differ from the %d written", len(got), len(big))
	}
	if fi, err := os.Stat(filepath.Join(out, "empty")); err != nil || fi.Size() != 0 {
		t.Errorf("empty file: %v", err)
	}
	want := []byte("abc\x00\x00\x00\x00\x00de" + strings.Repeat("\x00", 10))
	if got, _ := os.ReadFile(filepath.Join(out, "db/s.ibd")); !bytes.Equal(got, want) {
		t.Errorf("sparse file: got %q, want %q", got, want)
	}
}

func TestExtractRefusesBadInput(t *testing.T) {
	good := func() []byte {
		var b bytes.Buffer
		NewWriter(&b).WriteFile("a/b", bytes.Repeat([]byte("x"), 5000))
		return b.Bytes()
	}
	tests := []struct {
		name   string
		stream func() []byte
	}{
		{"absolute path", func() []byte { var b bytes.Buffer; NewWriter(&b).WriteFile("/etc/evil", []byte("x")); return b.Bytes() }},
		{"dot dot", func() []byte {
			var b bytes.Buffer
			NewWriter(&b).WriteFile("a/../../evil", []byte("x"))
			return b.Bytes()
		}},
		{"bit flip in payload", func() []byte { s := good(); s[len(s)-100] ^= 4; return s }},
		{"bad magic", func() []byte { s := good(); s[3] = 'X'; return s }},
		{"truncated payload", func() []byte { s := good(); return s[:len(s)-2000] }},
		{"truncated header", func() []byte { s := good(); return s[:20] }},
		{"chunk after end of file", func() []byte {
			var b bytes.Buffer
			w := NewWriter(&b)
			w.WriteFile("f", []byte("x"))
			w.Payload("f", 1, []byte("y"))
			return b.Bytes()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := extract(t, tc.stream())
			if err == nil {
				t.Fatal("extraction succeeded")
			}
			if strings.Contains(tc.name, "path") || strings.Contains(tc.name, "dot") {
				if !strings.Contains(err.Error(), "refused") {
					t.Fatalf("error does not say the path is refused: %v", err)
				}
			} else if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "offset") {
				t.Fatalf("want a corruption error naming the offset, got %v", err)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatal("target exists after a failed extraction")
			}
			if names, _ := os.ReadDir(filepath.Dir(out)); len(names) != 0 {
				t.Fatalf("left behind: %v", names)
			}
		})
	}
}

// realStream runs mariadb-backup --stream=xbstream against a throwaway
// server holding a 20,000-row table and returns the stream's path (under
// base, a directory of the test's).
func realStream(t *testing.T) (base, xbs string) {
	t.Helper()
	for _, b := range []string{"mariadb-backup", "mbstream"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is not installed", b)
		}
	}
	srv := mariadbtest.Start(t)
	db := mariadbtest.Open(t, srv, "")
	mariadbtest.Exec(t, db, "CREATE DATABASE x", "CREATE TABLE x.t (id INT PRIMARY KEY, v VARCHAR(100))",
		"INSERT INTO x.t SELECT seq, MD5(seq) FROM x.seq_1_to_20000")
	base, err := os.MkdirTemp("/dev/shm", "pristine-xbs-test-")
	if err != nil {
		base = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(base) })
	}
	xbs = filepath.Join(base, "b.xbs")
	cmd := "mariadb-backup --backup --stream=xbstream --socket=" + srv.Config.Socket() + " --user=root --datadir=" + srv.Config.Datadir +
		" --target-dir=" + filepath.Join(base, "bk") + " > " + xbs + " 2>" + filepath.Join(base, "bk.log")
	if out, err := exec.Command("/bin/sh", "-c", cmd).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(base, "bk.log"))
		t.Fatalf("mariadb-backup: %v %s %s", err, out, log)
	}
	return base, xbs
}

// TestMatchesMbstream extracts a real mariadb-backup stream with mbstream -x
// and with Extract and wants byte-identical trees.
func TestMatchesMbstream(t *testing.T) {
	base, xbs := realStream(t)
	ctx := context.Background()
	ref := filepath.Join(base, "ref")
	os.Mkdir(ref, 0o755)
	if out, err := exec.Command("/bin/sh", "-c", "mbstream -x -C "+ref+" < "+xbs).CombinedOutput(); err != nil {
		t.Fatalf("mbstream: %v %s", err, out)
	}
	f, err := os.Open(xbs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mine := filepath.Join(base, "mine")
	if _, err := Extract(ctx, f, mine, Options{Backup: true}); err != nil {
		t.Fatal(err)
	}
	n := 0
	filepath.WalkDir(ref, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(ref, p)
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(mine, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from mbstream's (%v)", rel, err)
		}
		n++
		return nil
	})
	if n < 10 {
		t.Fatalf("mbstream extracted only %d files", n)
	}
}
