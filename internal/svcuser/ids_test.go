package svcuser

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestClaim: ids are distinct while held, given back by Release, kept for
// a tree a dead holder left on disk (and handed back to that tree), and
// reused once that tree is gone.
func TestClaim(t *testing.T) {
	if os.Geteuid() != 0 {
		c, err := Claim(t.TempDir())
		if err != nil || c.Drop || c.UID != os.Geteuid() {
			t.Fatalf("without root Claim = %+v, %v; want the current user", c, err)
		}
		c.Release()
		return
	}
	old := IDDir
	IDDir = filepath.Join(t.TempDir(), "ids")
	t.Cleanup(func() { IDDir = old })
	dir := t.TempDir()
	a, err := Claim(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Claim(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if a.UID == b.UID || a.UID < IDBase || b.UID < IDBase || a.GID != a.UID || !a.Drop {
		t.Fatalf("two trees got %+v and %+v", a.Account, b.Account)
	}
	shared, _ := Get()
	if a.RunGID != shared.GID {
		t.Errorf("run directory group %d, want group %s (%d)", a.RunGID, Name, shared.GID)
	}
	a.Release()
	a.Release() // twice is harmless
	c, err := Claim(filepath.Join(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if c.UID != a.UID {
		t.Errorf("a released id is not reused: got %d, want %d", c.UID, a.UID)
	}
	// A holder that died (a record nobody holds) with its tree still on
	// disk, owned by the id: the id stays the tree's.
	dead := filepath.Join(dir, "dead")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	deadID := IDBase + 100
	if err := os.Chown(dead, deadID, deadID); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(IDDir, strconv.Itoa(deadID))
	if err := os.WriteFile(rec, []byte(dead+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var others []*Claimed
	for i := 0; i < 101; i++ {
		o, err := Claim(filepath.Join(dir, "o"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if o.UID == deadID {
			t.Fatalf("id %d given to another tree while %s, which it owns, is on disk", deadID, dead)
		}
		others = append(others, o)
	}
	again, err := Claim(dead)
	if err != nil || again.UID != deadID {
		t.Fatalf("the tree left by a dead holder got %+v, %v; want its id %d back", again, err, deadID)
	}
	// Dead again, and this time its tree is gone: the id is free.
	again.f.Close()
	again.f = nil
	if err := os.Remove(dead); err != nil {
		t.Fatal(err)
	}
	reuse, err := Claim(filepath.Join(dir, "new"))
	if err != nil {
		t.Fatal(err)
	}
	if reuse.UID != deadID {
		t.Errorf("a stale record's id was not reused: got %d, want %d", reuse.UID, deadID)
	}
	for _, o := range append(others, b, c, reuse) {
		o.Release()
	}
	if ents, _ := os.ReadDir(IDDir); len(ents) != 1 { // .lock
		t.Errorf("records left after every release: %d entries", len(ents))
	}
}

// TestSeal: a sealed tree belongs to pristine's user, symlinks untouched.
func TestSeal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sealing gives files to root: needs root")
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "db")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(sub, "t.ibd")
	if err := os.WriteFile(f, nil, 0o660); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(sub, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, sub, f} {
		if err := os.Lchown(p, IDBase+7, IDBase+7); err != nil {
			t.Fatal(err)
		}
	}
	if err := Seal(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, sub, f} {
		if owner(t, p) != 0 {
			t.Errorf("%s belongs to uid %d after Seal", p, owner(t, p))
		}
	}
	if fi, _ := os.Stat("/etc/passwd"); fi == nil || owner(t, "/etc/passwd") != 0 {
		t.Error("/etc/passwd changed?")
	}
}

func owner(t *testing.T, p string) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid)
}
