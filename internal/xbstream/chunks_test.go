package xbstream

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pristinedb/pristine/internal/archive"
)

// chunkInfo is one chunk of a stream, as listChunks finds it.
type chunkInfo struct {
	typ  byte
	path string
	end  int // offset just past the chunk: a chunk boundary
}

// chunkList walks the chunk headers of a valid stream.
func chunkList(t *testing.T, s []byte) []chunkInfo {
	t.Helper()
	var out []chunkInfo
	for pos := 0; pos < len(s); {
		if string(s[pos:pos+8]) != Magic {
			t.Fatalf("no chunk magic at offset %d", pos)
		}
		typ := s[pos+9]
		plen := int(binary.LittleEndian.Uint32(s[pos+10:]))
		path := string(s[pos+14 : pos+14+plen])
		p := pos + 14 + plen
		if typ != typeEOF {
			nsparse := 0
			if typ == typeSparse {
				nsparse = int(binary.LittleEndian.Uint32(s[p:]))
				p += 4
			}
			length := int(binary.LittleEndian.Uint64(s[p:]))
			p += 20 + 8*nsparse + length
		}
		out = append(out, chunkInfo{typ: typ, path: path, end: p})
		pos = p
	}
	return out
}

func TestCutStreamNamesOpenFiles(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Chunk = 100
	w.WriteFile("whole", bytes.Repeat([]byte("w"), 250))
	for i := range 7 {
		w.Payload(fmt.Sprintf("db/open%d.ibd", i), 0, []byte("first chunk only"))
	}
	out, err := extract(t, b.Bytes())
	if err == nil {
		t.Fatal("a stream with files left open extracted")
	}
	for _, want := range []string{"7 of 8 files have no end-of-file chunk", "db/open0.ibd", "db/open4.ibd", "and 2 more", "offset"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if !errors.Is(err, ErrIncomplete) || !errors.Is(err, ErrCorrupt) {
		t.Errorf("error is not ErrIncomplete and ErrCorrupt: %v", err)
	}
	if names, _ := os.ReadDir(filepath.Dir(out)); len(names) != 0 {
		t.Fatalf("left behind: %v", names)
	}
}

// TestRealStreamCutAtChunkBoundaries cuts a real mariadb-backup stream at
// chunk boundaries: every cut must fail as a backup and leave nothing, and
// a cut inside a file's chunks must fail even without Options.Backup.
func TestRealStreamCutAtChunkBoundaries(t *testing.T) {
	base, xbs := realStream(t)
	s, err := os.ReadFile(xbs)
	if err != nil {
		t.Fatal(err)
	}
	chunks := chunkList(t, s)
	files := map[string]bool{}
	for _, c := range chunks {
		files[c.path] = true
	}
	if len(files) < 100 {
		t.Fatalf("the real stream holds only %d files", len(files))
	}
	ctx := context.Background()
	try := func(n int, backup bool) (string, error) {
		out := filepath.Join(base, fmt.Sprintf("cut-%d-%v", n, backup))
		_, err := Extract(ctx, bytes.NewReader(s[:n]), out, Options{Threads: 2, Backup: backup})
		if err != nil {
			if _, serr := os.Stat(out); serr == nil {
				t.Fatalf("cut at %d: failed (%v) but left the target", n, err)
			}
		} else {
			os.RemoveAll(out)
		}
		return out, err
	}
	open, between := 0, 0
	for i, c := range chunks[:len(chunks)-1] {
		// Which files are open after this chunk?
		ended := map[string]bool{}
		started := map[string]bool{}
		for _, d := range chunks[:i+1] {
			started[d.path] = true
			if d.typ == typeEOF {
				ended[d.path] = true
			}
		}
		var left []string
		for p := range started {
			if !ended[p] {
				left = append(left, p)
			}
		}
		// Every boundary as a backup; a sample of the others as a plain stream.
		_, err := try(c.end, true)
		if err == nil || !errors.Is(err, ErrIncomplete) {
			t.Fatalf("cut after chunk %d of %d (%c %s, offset %d): want ErrIncomplete, got %v", i+1, len(chunks), c.typ, c.path, c.end, err)
		}
		if len(left) > 0 {
			open++
			if !strings.Contains(err.Error(), left[0]) && !strings.Contains(err.Error(), "more") {
				t.Fatalf("cut after chunk %d: the error does not name the open file %s: %v", i+1, left[0], err)
			}
			if _, err := try(c.end, false); err == nil {
				t.Fatalf("cut after chunk %d leaves %v open but extracted as a plain stream", i+1, left)
			}
		} else {
			between++
			if !errors.Is(err, ErrUnfinished) || !strings.Contains(err.Error(), "xtrabackup_checkpoints") {
				t.Fatalf("cut between files after chunk %d: want ErrUnfinished naming xtrabackup_checkpoints, got %v", i+1, err)
			}
			if between%50 == 1 {
				if _, err := try(c.end, false); err != nil {
					t.Fatalf("a plain stream of whole files (cut after chunk %d) refused: %v", i+1, err)
				}
			}
		}
	}
	if open == 0 || between == 0 {
		t.Fatalf("cuts inside a file: %d, between files: %d: want some of each", open, between)
	}
	t.Logf("%d chunks, %d files: %d cuts inside a file, %d between files, all refused", len(chunks), len(files), open, between)
}

// TestExtractSetsItsOwnModes: whatever the umask, every extracted file is
// archive.FileMode and every directory (the target included)
// archive.DirMode, owned by the extracting user.
func TestExtractSetsItsOwnModes(t *testing.T) {
	var s bytes.Buffer
	xw := NewWriter(&s)
	for _, p := range []string{"ibdata1", "shop/t.ibd", "shop/deep/x"} {
		if err := xw.WriteFile(p, []byte("data of "+p)); err != nil {
			t.Fatal(err)
		}
	}
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Extract(context.Background(), bytes.NewReader(s.Bytes()), out, Options{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		want := archive.FileMode
		if fi.IsDir() {
			want = fs.ModeDir | archive.DirMode
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
			t.Errorf("%s: owner %d, want %d", p, st.Uid, os.Geteuid())
		}
		n++
		return nil
	})
	if err != nil || n != 6 {
		t.Fatalf("walked %d entries (want 6): %v", n, err)
	}
}
