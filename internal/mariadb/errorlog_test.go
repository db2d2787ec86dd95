package mariadb_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// TestCapErrorLog: a log over its cap keeps its last lines after a note;
// one within it, or none, is left alone; a symlink or a hard link put in
// the log's place (the run directory is the server account's) is not
// followed: the file it names keeps every byte.
func TestCapErrorLog(t *testing.T) {
	big := strings.Repeat("a line of the server's error log\n", 1000) + "the last line\n"
	for _, tc := range []struct {
		name    string
		make    func(dir, log, outside string) // outside holds big
		wantCut bool
		wantErr bool
	}{
		{"over its cap", func(dir, log, _ string) { write(t, log, big) }, true, false},
		{"within its cap", func(dir, log, _ string) { write(t, log, "short\n") }, false, false},
		{"none", func(dir, log, _ string) {}, false, false},
		{"a symlink", func(dir, log, outside string) { must(t, os.Symlink(outside, log)) }, false, false},
		{"a hard link", func(dir, log, outside string) { must(t, os.Link(outside, log)) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log, outside := filepath.Join(dir, "error.log"), filepath.Join(dir, "other")
			write(t, outside, big)
			tc.make(dir, log, outside)
			cut, err := mariadb.CapErrorLog(log, 4096, 1024)
			if (err != nil) != tc.wantErr || (cut > 0) != tc.wantCut {
				t.Fatalf("CapErrorLog cut %d bytes, err %v; want a cut: %v, an error: %v", cut, err, tc.wantCut, tc.wantErr)
			}
			if b, _ := os.ReadFile(outside); string(b) != big {
				t.Fatalf("the file outside the log changed: %d bytes left of %d", len(b), len(big))
			}
			if !tc.wantCut {
				return
			}
			b, _ := os.ReadFile(log)
			if len(b) > 4096 || !strings.HasPrefix(string(b), "[pristine] ") || !strings.HasSuffix(string(b), "\na line of the server's error log\nthe last line\n") {
				t.Fatalf("the cut log (%d bytes) lost its note or its last lines:\n%s", len(b), b)
			}
		})
	}
}

func write(t *testing.T, path, s string) { must(t, os.WriteFile(path, []byte(s), 0o600)) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCapErrorLogWaitsForAWrite: a cut that begins while the server is
// still writing a long entry waits for that write, and the cut log ends
// with what it wrote last. Cut from the end read before the write was
// done, the log lost the write's rest: the truncation waited for the
// write, then threw it away.
func TestCapErrorLogWaitsForAWrite(t *testing.T) {
	for _, dir := range []string{t.TempDir(), shmDir(t)} {
		log := filepath.Join(dir, "error.log")
		f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		must(t, err)
		entry := []byte(strings.Repeat(strings.Repeat("x", 99)+"\n", 64<<20/100) + "the last line\n")
		done := make(chan error, 1)
		go func() { _, err := f.Write(entry); done <- err }()
		for {
			if fi, err := os.Stat(log); err == nil && fi.Size() > 4096 {
				break
			}
		}
		cut, err := mariadb.CapErrorLog(log, 4096, 1024)
		must(t, err)
		must(t, <-done)
		f.Close()
		b, _ := os.ReadFile(log)
		if cut == 0 || len(b) > 4096 || !strings.HasSuffix(string(b), "\nthe last line\n") {
			t.Fatalf("%s: the log cut (%d bytes) while its server wrote %d bytes in one write is %d bytes and ends %q, want the write's last line",
				dir, cut, len(entry), len(b), lastLine(b))
		}
	}
}

// shmDir is a directory of the test's on /dev/shm (tmpfs), where the
// tests' roots keep their slots' run directories; t.TempDir where there
// is none.
func shmDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "pristine-errorlog-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func lastLine(b []byte) string {
	s := strings.TrimSuffix(string(b), "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
