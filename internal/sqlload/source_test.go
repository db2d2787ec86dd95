package sqlload

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestSources(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.sql", "a.sql.zst", "c.sql.gz", "notes.txt", "d.sqlx"} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o644)
	}
	os.Mkdir(filepath.Join(dir, "e.sql"), 0o755) // a directory is no input file
	outside := filepath.Join(t.TempDir(), "secret.sql")
	os.WriteFile(outside, []byte("SELECT 1;"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "f.sql")) // not followed, and said so
	var skipped []string
	srcs, err := Sources(dir, func(path, why string) { skipped = append(skipped, filepath.Base(path)+": "+why) })
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 2 || !strings.HasPrefix(skipped[0], "e.sql: not a regular file") || !strings.HasPrefix(skipped[1], "f.sql: a symlink") {
		t.Errorf("Sources(dir) said it skipped %q, want e.sql (a directory) and f.sql (a symlink)", skipped)
	}
	var names []string
	for _, s := range srcs {
		names = append(names, filepath.Base(s.Name))
	}
	if got, want := strings.Join(names, " "), "a.sql.zst b.sql c.sql.gz"; got != want {
		t.Errorf("Sources(dir) = %s, want %s", got, want)
	}

	if srcs, err := Sources("-", nil); err != nil || len(srcs) != 1 || srcs[0].Name != "stdin" {
		t.Errorf("Sources(-) = %+v, %v; want stdin", srcs, err)
	}
	if srcs, err := Sources(filepath.Join(dir, "notes.txt"), nil); err != nil || len(srcs) != 1 {
		t.Errorf("a file of any name is a source: got %+v, %v", srcs, err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing.sql"), filepath.Join(dir, "e.sql")} {
		if _, err := Sources(bad, nil); err == nil {
			t.Errorf("Sources(%s) succeeded, want an error", bad)
		}
	}
}

func TestDecompress(t *testing.T) {
	const text = "SELECT 1;\n"
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(text))
	w.Close()
	enc, _ := zstd.NewWriter(nil)
	tests := map[string][]byte{
		"plain": []byte(text),
		"gzip":  gz.Bytes(),
		"zstd":  enc.EncodeAll([]byte(text), nil),
		"short": []byte("S"),
		"empty": nil,
	}
	for name, in := range tests {
		r, release, err := decompress(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := io.ReadAll(r)
		release()
		want := text
		if name == "short" || name == "empty" {
			want = string(in)
		}
		if err != nil || string(got) != want {
			t.Errorf("%s: read %q, %v; want %q", name, got, err, want)
		}
	}
}
