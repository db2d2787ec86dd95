package archive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzUnpack feeds arbitrary bytes to the stream reader: it must never
// panic, and must either fail (leaving no target) or produce the target.
// The seed corpus in testdata/fuzz/FuzzUnpack holds small valid archives,
// stored and compressed, so plain `go test` runs them too.
func FuzzUnpack(f *testing.F) {
	f.Add([]byte("PRSA"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := filepath.Join(t.TempDir(), "o")
		_, err := Unpack(context.Background(), bytes.NewReader(data), out, UnpackOptions{Threads: 2})
		_, serr := os.Stat(out)
		if err != nil && serr == nil {
			t.Fatalf("failed (%v) but left the target", err)
		}
		if err == nil && serr != nil {
			t.Fatalf("succeeded without a target: %v", serr)
		}
	})
}

// FuzzTable checks that the table decoder never panics and never accepts a
// path that could escape the target.
func FuzzTable(f *testing.F) {
	f.Add(encodeTable([]entry{{kind: kindDir, mode: 0o755, path: "d"}, {kind: kindFile, mode: 0o644, size: 3, extents: 1, path: "d/f"}, {kind: kindSymlink, mode: 0o777, path: "l", link: "d/f"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := decodeTable(b)
		if err != nil {
			return
		}
		for _, e := range es {
			if CheckPath(e.path) != nil {
				t.Fatalf("accepted bad path %q", e.path)
			}
		}
	})
}

func TestTableRefusesEscapes(t *testing.T) {
	dir := entry{kind: kindDir, mode: 0o755, path: "a"}
	tests := []struct {
		name string
		es   []entry
	}{
		{"absolute", []entry{{kind: kindFile, path: "/etc/passwd"}}},
		{"dot dot", []entry{{kind: kindFile, path: "../x"}}},
		{"inner dot dot", []entry{dir, {kind: kindFile, path: "a/../../x"}}},
		{"unclean", []entry{dir, {kind: kindFile, path: "a//x"}}},
		{"undeclared parent", []entry{{kind: kindFile, path: "nodir/x"}}},
		{"duplicate", []entry{dir, dir}},
		{"symlink absolute", []entry{{kind: kindSymlink, path: "l", link: "/etc"}}},
		{"symlink up", []entry{dir, {kind: kindSymlink, path: "a/l", link: "../../x"}}},
		{"symlink chain", []entry{dir, {kind: kindSymlink, path: "a/up", link: ".."}, {kind: kindSymlink, path: "esc", link: "a/up/.."}}},
		{"file under symlink", []entry{{kind: kindSymlink, path: "l", link: "."}, {kind: kindFile, path: "l/x"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeTable(encodeTable(tc.es)); err == nil {
				t.Fatal("table accepted")
			}
		})
	}
	ok := []entry{dir, {kind: kindSymlink, path: "a/l", link: "../a"}, {kind: kindSymlink, path: "top", link: "a/l/l"}}
	if _, err := decodeTable(encodeTable(ok)); err != nil {
		t.Fatalf("harmless links refused: %v", err)
	}
}

// TestWriteFuzzCorpus regenerates the committed seed corpus when
// PRISTINE_WRITE_CORPUS=1.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("PRISTINE_WRITE_CORPUS") != "1" {
		t.Skip("set PRISTINE_WRITE_CORPUS=1 to rewrite testdata/fuzz")
	}
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "f"), bytes.Repeat([]byte("ab"), 3000), 0o644)
	os.WriteFile(filepath.Join(src, "e"), nil, 0o600)
	os.Symlink("d/f", filepath.Join(src, "l"))
	for i, c := range []bool{false, true} {
		data := packBytes(t, src, PackOptions{Compress: c, ExtentSize: Align})
		dir := filepath.Join("testdata", "fuzz", "FuzzUnpack")
		os.MkdirAll(dir, 0o755)
		body := "go test fuzz v1\n[]byte(" + quote(data) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, []string{"stored", "zstd"}[i]), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func quote(b []byte) string {
	var s bytes.Buffer
	s.WriteByte('"')
	for _, c := range b {
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			s.WriteByte(c)
		} else {
			s.WriteString("\\x")
			s.WriteByte("0123456789abcdef"[c>>4])
			s.WriteByte("0123456789abcdef"[c&15])
		}
	}
	s.WriteByte('"')
	return s.String()
}
