package rootdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenCreatesAndReopens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "root")
	r, err := Open(dir)
	if err != nil {
		t.Fatalf("Open new: %v", err)
	}
	if !validID(r.ID()) {
		t.Errorf("ID %q is not 32 hex digits", r.ID())
	}
	if b, err := os.ReadFile(filepath.Join(dir, MarkerName)); err != nil || strings.TrimSpace(string(b)) != r.ID() {
		t.Errorf("marker holds %q (%v); want %s", b, err, r.ID())
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if again.ID() != r.ID() {
		t.Errorf("reopened root has id %s; want %s", again.ID(), r.ID())
	}
	if r.Data() != filepath.Join(r.Path, "data") {
		t.Errorf("Data() = %s", r.Data())
	}
}

func TestOpenResolvesSymlinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	r, err := Open(filepath.Join(base, "link", "root"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(real)
	if r.Path != filepath.Join(want, "root") {
		t.Errorf("Path = %s; want %s", r.Path, filepath.Join(want, "root"))
	}
}

func TestOpenRefuses(t *testing.T) {
	home, _ := os.UserHomeDir()
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := t.TempDir()
	if err := os.WriteFile(filepath.Join(damaged, MarkerName), []byte("not an id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"slash", "/", "system or home directory"},
		{"tmp", "/tmp", "system or home directory"},
		{"dev-shm", "/dev/shm", "system or home directory"},
		{"home", home, "system or home directory"},
		{"home's parent", filepath.Dir(home), "system or home directory"},
		{"foreign non-empty dir", foreign, "not empty and has no .pristine-root marker"},
		{"damaged marker", damaged, "is damaged"},
		{"a file", file, "not a directory"},
		{"empty", "", "empty path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%q): %v; want an error containing %q", c.path, err, c.want)
			}
			if c.path != "" && !errors.Is(err, ErrNotOwned) {
				t.Errorf("Open(%q): %v; want ErrNotOwned", c.path, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(foreign, MarkerName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused directory got a marker: %v", err)
	}
}

func TestOpenConcurrentAgreesOnID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			r, err := Open(dir)
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			ids[i] = r.ID()
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent Opens disagree on the id: %v", ids)
		}
	}
}

func TestCheck(t *testing.T) {
	base := t.TempDir()
	r, err := Open(filepath.Join(base, "root"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"data/t1", "elsewhere"} {
		if err := os.MkdirAll(filepath.Join(r.Path, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(r.Path, "data", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(r.Path, "elsewhere"), filepath.Join(r.Path, "data", "inward")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		ok         bool
	}{
		{"existing dir inside", r.Path + "/data/t1", true},
		{"not yet created", r.Path + "/data/t1/new/deeper", true},
		{"data dir", r.Data(), true},
		{"trailing slash", r.Path + "/data/", true},
		{"the root itself", r.Path, false},
		{"the root with a slash", r.Path + "/", false},
		{"parent of the root", base, false},
		{"sibling with the root as prefix", r.Path + "x/data", false},
		{"dot-dot escaping", r.Path + "/data/../../outside", false},
		{"dot-dot staying inside", r.Path + "/data/../data/t1", false},
		{"relative", "data/t1", false},
		{"symlink escaping", r.Path + "/data/escape/x", false},
		{"symlink pointing inside", r.Path + "/data/inward", false},
		{"symlink as last component", r.Path + "/data/escape", false},
		{"system path", "/etc/passwd", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := r.Check(c.path)
			if c.ok && err != nil {
				t.Errorf("Check(%s): %v; want nil", c.path, err)
			}
			if !c.ok && !errors.Is(err, ErrOutside) {
				t.Errorf("Check(%s): %v; want ErrOutside", c.path, err)
			}
		})
	}
}

func TestCheckRootReplacedBySymlink(t *testing.T) {
	base := t.TempDir()
	r, err := Open(filepath.Join(base, "root"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(r.Path, filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "moved"), r.Path); err != nil {
		t.Fatal(err)
	}
	if err := r.Check(r.Data()); !errors.Is(err, ErrOutside) {
		t.Errorf("Check after the root became a symlink: %v; want ErrOutside", err)
	}
}

func TestJoin(t *testing.T) {
	r := &Root{Path: "/srv/pristine"}
	for _, c := range []struct {
		elem []string
		want string // "" means refused
	}{
		{[]string{"data", "t1"}, "/srv/pristine/data/t1"},
		{[]string{"data/t1/slot-3"}, "/srv/pristine/data/t1/slot-3"},
		{[]string{"data", ".."}, ""},
		{[]string{"data/../../etc"}, ""},
		{[]string{"/etc"}, ""},
		{[]string{"data", ""}, ""},
		{[]string{"data//t1"}, ""},
		{[]string{"./data"}, ""},
		{nil, ""},
	} {
		got, err := r.Join(c.elem...)
		if c.want == "" {
			if !errors.Is(err, ErrOutside) {
				t.Errorf("Join(%q) = %q, %v; want ErrOutside", c.elem, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Join(%q) = %q, %v; want %q", c.elem, got, err, c.want)
		}
	}
}

func TestDefault(t *testing.T) {
	t.Setenv("PRISTINE_ROOT", "/srv/x")
	if got := Default(); got != "/srv/x" {
		t.Errorf("Default with PRISTINE_ROOT = %s", got)
	}
	t.Setenv("PRISTINE_ROOT", "")
	want := "/var/lib/pristine"
	if os.Geteuid() != 0 {
		home, _ := os.UserHomeDir()
		want = filepath.Join(home, ".local", "share", "pristine")
	}
	if got := Default(); got != want {
		t.Errorf("Default = %s; want %s", got, want)
	}
}
