package client_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pristinedb/pristine/client"
)

// TestContentKeyInputKinds: every kind of change to the files a key names
// (a file removed, an empty file added, a glob matching one more file)
// gives a new key, so the template is built again; what does not change
// their content (times, modes, rewriting the same bytes) gives the same
// key, so it is not. TestContentKey covers edits, renames and extras.
func TestContentKeyInputKinds(t *testing.T) {
	base := map[string]string{"m/001.sql": "CREATE TABLE a (id INT);", "m/002.sql": "CREATE TABLE b (id INT);"}
	for _, c := range []struct {
		name    string
		pattern string
		edit    func(t *testing.T, dir string)
		same    bool
	}{
		{"a file removed", "m", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "m/002.sql"))) }, false},
		{"an empty file added", "m", func(t *testing.T, dir string) { must(t, os.WriteFile(filepath.Join(dir, "m/003.sql"), nil, 0o644)) }, false},
		{"a glob matches one more", "m/*.sql", func(t *testing.T, dir string) { write(t, dir, map[string]string{"m/003.sql": "x"}) }, false},
		{"a file the glob does not match", "m/*.sql", func(t *testing.T, dir string) { write(t, dir, map[string]string{"m/README": "x"}) }, true},
		{"times changed", "m", func(t *testing.T, dir string) {
			future := time.Now().Add(time.Hour)
			must(t, os.Chtimes(filepath.Join(dir, "m/001.sql"), future, future))
		}, true},
		{"mode changed", "m", func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, "m/001.sql"), 0o600)) }, true},
		{"the same bytes written again", "m", func(t *testing.T, dir string) { write(t, dir, base) }, true},
		{"an empty directory added", "m", func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, "m/empty"), 0o755)) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, base)
			key := func() string {
				k, err := client.ContentKey([]string{filepath.Join(dir, c.pattern)})
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			before := key()
			c.edit(t, dir)
			if after := key(); (after == before) != c.same {
				t.Fatalf("key %s after, %s before: same=%v, want %v", after, before, after == before, c.same)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
