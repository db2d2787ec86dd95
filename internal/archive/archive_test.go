package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testExtent keeps test archives small while still crossing extents.
const testExtent = 64 << 10

// makeTree builds a directory with every kind of thing the format carries.
func makeTree(t testing.TB, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "db", "sub"), 0o750))
	must(os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600))
	for i := range 150 {
		must(os.WriteFile(filepath.Join(dir, "db", "small"+string(rune('a'+i%26))+strings.Repeat("x", i/26)), bytes.Repeat([]byte{byte(i)}, i*7), 0o640))
	}
	big := make([]byte, 5*testExtent+1234)
	for i := range big {
		big[i] = byte(i*31 + i>>9)
	}
	must(os.WriteFile(filepath.Join(dir, "db", "sub", "big.ibd"), big, 0o660))
	// A sparse file: data at 0 and in the middle, a hole at the end.
	f, err := os.Create(filepath.Join(dir, "db", "sparse.ibd"))
	must(err)
	must(f.Truncate(4 << 20))
	_, err = f.WriteAt(bytes.Repeat([]byte("page"), 4096), 0)
	must(err)
	_, err = f.WriteAt(bytes.Repeat([]byte("mid!"), 2048), 2<<20)
	must(err)
	must(f.Close())
	must(os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Chmod(filepath.Join(dir, "db", "sub"), 0o2750))
	must(os.Symlink("sub/big.ibd", filepath.Join(dir, "db", "link")))
	must(os.Symlink("../empty", filepath.Join(dir, "db", "uplink")))
	old := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	must(os.Chtimes(filepath.Join(dir, "run.sh"), old, old))
}

// sameTree fails the test unless b has the same entries, contents, symlink
// targets and file mtimes as a, and pristine's modes (FileMode, DirMode:
// never a's).
func sameTree(t *testing.T, a, b string) {
	t.Helper()
	seen := 0
	err := filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		q := filepath.Join(b, rel)
		ai, err := os.Lstat(p)
		if err != nil {
			return err
		}
		bi, err := os.Lstat(q)
		if err != nil {
			t.Errorf("%s: missing from the copy: %v", rel, err)
			return nil
		}
		seen++
		want := ai.Mode()
		switch {
		case ai.IsDir():
			want = fs.ModeDir | DirMode
		case ai.Mode().IsRegular():
			want = FileMode
		}
		if bi.Mode() != want {
			t.Errorf("%s: mode %v, copy has %v (want %v)", rel, ai.Mode(), bi.Mode(), want)
		}
		switch {
		case ai.Mode().IsRegular():
			x, _ := os.ReadFile(p)
			y, _ := os.ReadFile(q)
			if !bytes.Equal(x, y) {
				t.Errorf("%s: contents differ (%d vs %d bytes)", rel, len(x), len(y))
			}
			if !ai.ModTime().Equal(bi.ModTime()) {
				t.Errorf("%s: mtime %v, copy has %v", rel, ai.ModTime(), bi.ModTime())
			}
		case ai.Mode()&fs.ModeSymlink != 0:
			x, _ := os.Readlink(p)
			y, _ := os.Readlink(q)
			if x != y {
				t.Errorf("%s: symlink %q, copy has %q", rel, x, y)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	filepath.WalkDir(b, func(string, fs.DirEntry, error) error { n++; return nil })
	if n != seen {
		t.Errorf("copy has %d entries, original %d", n, seen)
	}
}

func packBytes(t testing.TB, dir string, opts PackOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if opts.ExtentSize == 0 {
		opts.ExtentSize = testExtent
	}
	if _, err := Pack(context.Background(), dir, &buf, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// noLeftovers fails if anything but want is in dir (no temp directories).
func noLeftovers(t *testing.T, dir string, want ...string) {
	t.Helper()
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		ok := false
		for _, w := range want {
			ok = ok || n.Name() == w
		}
		if !ok {
			t.Errorf("left behind in %s: %s", dir, n.Name())
		}
	}
}

func TestRoundTrip(t *testing.T) {
	src := t.TempDir()
	makeTree(t, src)
	tests := []struct {
		name     string
		compress bool
		how      string // "stream", "file", "pipe"
		opts     UnpackOptions
	}{
		{name: "stream", how: "stream"},
		{name: "stream compressed", how: "stream", compress: true},
		{name: "file", how: "file"},
		{name: "file copy_file_range", how: "file", opts: UnpackOptions{Verify: VerifyHeaders}},
		{name: "file pwrite", how: "file", opts: UnpackOptions{NoCopyRange: true, Threads: 3}},
		{name: "file compressed", how: "file", compress: true},
		{name: "file verify all", how: "file", opts: UnpackOptions{Verify: VerifyAll}},
		{name: "pipe", how: "pipe"},
		{name: "pipe splice", how: "pipe", opts: UnpackOptions{Verify: VerifyHeaders}},
		{name: "unix socket", how: "socket"},
		{name: "tcp loopback", how: "tcp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			work := t.TempDir()
			out := filepath.Join(work, "out")
			var st Stats
			var err error
			switch tc.how {
			case "stream":
				data := packBytes(t, src, PackOptions{Compress: tc.compress})
				st, err = Unpack(ctx, bytes.NewReader(data), out, tc.opts)
			case "file":
				f, ferr := os.Create(filepath.Join(work, "a.prsa"))
				if ferr != nil {
					t.Fatal(ferr)
				}
				defer f.Close()
				if _, err := Pack(ctx, src, f, PackOptions{Compress: tc.compress, ExtentSize: testExtent}); err != nil {
					t.Fatal(err)
				}
				st, err = UnpackFile(ctx, f, out, tc.opts)
			case "pipe", "socket", "tcp":
				pr, pw := connected(t, tc.how)
				packErr := make(chan error, 1)
				go func() {
					_, err := Pack(ctx, src, pw, PackOptions{ExtentSize: testExtent})
					pw.Close()
					packErr <- err
				}()
				st, err = Unpack(ctx, pr, out, tc.opts)
				pr.Close()
				if perr := <-packErr; perr != nil {
					t.Fatal(perr)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			sameTree(t, src, out)
			noLeftovers(t, work, "out", "a.prsa")
			if tc.how == "file" && tc.opts.Verify == VerifyHeaders && st.Copied == 0 {
				t.Errorf("copy_file_range rung not used: %+v", st)
			}
			if st.Files != 154 || st.Symlinks != 2 {
				t.Errorf("stats: %d files, %d symlinks; want 154, 2", st.Files, st.Symlinks)
			}
			if tc.how == "pipe" && tc.opts.Verify == VerifyHeaders && st.Spliced == 0 {
				t.Errorf("splice rung not used: %+v", st)
			}
			// The hole of the sparse file stays a hole.
			var s syscall.Stat_t
			if err := syscall.Stat(filepath.Join(out, "db", "sparse.ibd"), &s); err != nil {
				t.Fatal(err)
			}
			if s.Blocks*512 >= 1<<20 {
				t.Errorf("sparse file has %d bytes allocated, want its holes kept", s.Blocks*512)
			}
		})
	}
}

// connected returns the two ends of a pipe, a unix socket pair or a TCP
// connection over loopback, as files the way a shell hands them over.
func connected(t *testing.T, how string) (r, w *os.File) {
	t.Helper()
	switch how {
	case "pipe":
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return r, w
	case "socket":
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fds[0]), "socket-r"), os.NewFile(uintptr(fds[1]), "socket-w")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	rf, err := accepted.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	wf, err := dialed.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	accepted.Close() // File returned duplicates
	dialed.Close()
	return rf, wf
}

func TestPackSkipsHoles(t *testing.T) {
	src := t.TempDir()
	makeTree(t, src)
	data := packBytes(t, src, PackOptions{})
	// 4 MiB sparse file with 24 KiB of data: the archive must not carry the holes.
	if len(data) > 2<<20 {
		t.Fatalf("archive is %d bytes; holes were sent", len(data))
	}
}

func TestTargetMustBeNewOrEmpty(t *testing.T) {
	src := t.TempDir()
	makeTree(t, src)
	data := packBytes(t, src, PackOptions{})
	work := t.TempDir()
	out := filepath.Join(work, "out")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "keep"), []byte("x"), 0o644)
	_, err := Unpack(context.Background(), bytes.NewReader(data), out, UnpackOptions{})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("unpack into a non-empty directory: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "keep")); string(b) != "x" {
		t.Fatal("existing file was touched")
	}
	// An empty directory is replaced.
	empty := filepath.Join(work, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := Unpack(context.Background(), bytes.NewReader(data), empty, UnpackOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, empty)
}

func TestCorruptionIsDetected(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "f1"), bytes.Repeat([]byte("abcdefgh"), 9000), 0o644)
	os.WriteFile(filepath.Join(src, "f2"), []byte("tiny"), 0o644)
	data := packBytes(t, src, PackOptions{})
	covered := coveredRanges(t, data)
	for _, fileMode := range []bool{false, true} {
		for i := 0; i < len(data); i++ {
			if !covered[i] || (i%251 != 0 && !isHeader(data, i)) {
				continue // padding is not covered by checksums; sample payloads
			}
			bad := bytes.Clone(data)
			bad[i] ^= 1 << (i % 8)
			checkRefused(t, bad, fileMode, "flip at "+strconv.Itoa(i))
		}
	}
	for _, fileMode := range []bool{false, true} {
		for cut := 0; cut < len(data); cut += 1 + cut/4 {
			checkRefused(t, data[:cut], fileMode, "cut at "+strconv.Itoa(cut))
		}
	}
}

// checkRefused unpacks bad bytes and wants ErrCorrupt and no target.
func checkRefused(t *testing.T, bad []byte, fileMode bool, what string) {
	t.Helper()
	work := t.TempDir()
	out := filepath.Join(work, "out")
	var err error
	if fileMode {
		p := filepath.Join(work, "a")
		os.WriteFile(p, bad, 0o644)
		f, _ := os.Open(p)
		_, err = UnpackFile(context.Background(), f, out, UnpackOptions{})
		f.Close()
	} else {
		_, err = Unpack(context.Background(), bytes.NewReader(bad), out, UnpackOptions{})
	}
	if err == nil {
		t.Fatalf("%s (file=%v): unpack succeeded", what, fileMode)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s (file=%v): error does not report corruption: %v", what, fileMode, err)
	}
	if !strings.Contains(err.Error(), "offset") {
		t.Fatalf("%s: error does not name the offset: %v", what, err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Fatalf("%s: target exists after a failed unpack", what)
	}
	noLeftovers(t, work, "a")
}

// isHeader reports whether byte i lies in a record header.
func isHeader(data []byte, i int) bool {
	for pos := uint64(0); pos < uint64(len(data)); {
		h, _ := decodeHeader(data[pos:], pos)
		if uint64(i) < pos+HeaderSize {
			return uint64(i) >= pos
		}
		pos = h.next()
	}
	return false
}

// coveredRanges marks the bytes that headers and payloads occupy.
func coveredRanges(t *testing.T, data []byte) []bool {
	c := make([]bool, len(data))
	for pos := uint64(0); pos < uint64(len(data)); {
		h, err := decodeHeader(data[pos:], pos)
		if err != nil {
			t.Fatalf("walk archive: %v", err)
		}
		for i := pos; i < pos+HeaderSize; i++ {
			c[i] = true
		}
		for i := h.payloadPos(); i < h.next(); i++ {
			c[i] = true
		}
		pos = h.next()
	}
	return c
}

func TestCorruptErrorNamesFile(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "victim.ibd"), bytes.Repeat([]byte("v"), 3*Align), 0o644)
	data := packBytes(t, src, PackOptions{})
	i := bytes.Index(data, []byte("vvvv"))
	data[i+100] ^= 0xff
	_, err := Unpack(context.Background(), bytes.NewReader(data), filepath.Join(t.TempDir(), "o"), UnpackOptions{})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != "victim.ibd" {
		t.Fatalf("want a CorruptError naming victim.ibd, got %v", err)
	}
}

func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "big"), bytes.Repeat([]byte("z"), 4<<20), 0o644)
	data := packBytes(t, src, PackOptions{})
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, 0) })
	_, err := Unpack(context.Background(), bytes.NewReader(data), filepath.Join(mnt, "out"), UnpackOptions{})
	if err == nil || !strings.Contains(err.Error(), "filesystem is full") {
		t.Fatalf("want a full-disk error with a hint, got %v", err)
	}
	noLeftovers(t, mnt)
}

func TestStreamFromReaderOnly(t *testing.T) {
	// A reader that is neither a file nor a pipe, delivering odd sizes.
	src := t.TempDir()
	makeTree(t, src)
	data := packBytes(t, src, PackOptions{Compress: true})
	out := filepath.Join(t.TempDir(), "o")
	if _, err := Unpack(context.Background(), io.MultiReader(bytes.NewReader(data[:1000]), bytes.NewReader(data[1000:])), out, UnpackOptions{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, out)
}

// TestUnpackSetsItsOwnModes plays a crafted archive: a root-owned setuid
// copy of /usr/bin/id, a setgid and a world-writable sticky directory, a
// world-writable file and a root directory of mode 0777. Extracted from a
// stream and from a file, every file is FileMode and every directory
// DirMode, owned by the extracting user: nothing comes from the archive.
func TestUnpackSetsItsOwnModes(t *testing.T) {
	src := t.TempDir()
	id, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Skipf("no /usr/bin/id to plant: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(src, "id"), id, 0o755))
	must(os.Chmod(filepath.Join(src, "id"), fs.ModeSetuid|0o755))
	must(os.Mkdir(filepath.Join(src, "g"), 0o755))
	must(os.Chmod(filepath.Join(src, "g"), fs.ModeSetgid|0o775))
	must(os.Mkdir(filepath.Join(src, "tmp"), 0o755))
	must(os.Chmod(filepath.Join(src, "tmp"), fs.ModeSticky|0o777))
	must(os.WriteFile(filepath.Join(src, "tmp", "open"), []byte("x"), 0o644))
	must(os.Chmod(filepath.Join(src, "tmp", "open"), 0o666))
	must(os.Chmod(src, 0o777))
	if fi, _ := os.Stat(filepath.Join(src, "id")); fi.Mode()&fs.ModeSetuid == 0 {
		t.Fatalf("the planted file is not setuid (%v): the test proves nothing", fi.Mode())
	}
	data := packBytes(t, src, PackOptions{})
	for _, how := range []string{"stream", "file"} {
		t.Run(how, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var err error
			if how == "stream" {
				_, err = Unpack(context.Background(), bytes.NewReader(data), out, UnpackOptions{})
			} else {
				p := filepath.Join(t.TempDir(), "a.prs")
				must(os.WriteFile(p, data, 0o600))
				f, ferr := os.Open(p)
				must(ferr)
				defer f.Close()
				_, err = UnpackFile(context.Background(), f, out, UnpackOptions{})
			}
			must(err)
			n := 0
			must(filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
				must(err)
				fi, err := os.Lstat(p)
				must(err)
				want := FileMode
				if fi.IsDir() {
					want = fs.ModeDir | DirMode
				}
				if fi.Mode() != want {
					t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
				}
				if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
					t.Errorf("%s: owner %d, want the extracting user %d", p, st.Uid, os.Geteuid())
				}
				n++
				return nil
			}))
			if n != 5 {
				t.Errorf("extracted %d entries, want 5", n)
			}
		})
	}
}

// TestPackReplace: PackOptions.Replace packs the given content for a file
// instead of what is on disk (shorter, longer than an extent, empty), and
// every other file as it is.
func TestPackReplace(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"shorter", []byte(`{"name":"x"}`)},
		{"several extents", bytes.Repeat([]byte("0123456789"), 3*testExtent/10+7)},
		{"empty", []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), filepath.Join(t.TempDir(), "out")
			makeTree(t, src)
			raw := packBytes(t, src, PackOptions{Replace: map[string][]byte{"db/smallb": tc.body}})
			if _, err := Unpack(context.Background(), bytes.NewReader(raw), dst, UnpackOptions{}); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(dst, "db", "smallb")); err != nil || !bytes.Equal(got, tc.body) {
				t.Fatalf("the replaced file holds %d bytes (%v), want the %d given", len(got), err, len(tc.body))
			}
			// The source with the replaced content, and its time (kept).
			p := filepath.Join(src, "db", "smallb")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, tc.body, 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			sameTree(t, src, dst)
		})
	}
}
