package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/rootdir"
)

// newCatalog opens a catalog on plain copies in a new root; no server is
// involved.
func newCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	root, err := rootdir.Open(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(root, cow.NewCopy(root))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// publish stages a template of name with a data directory of n bytes and
// publishes it, as a build does.
func publish(t *testing.T, c *catalog.Catalog, name string, n int, created time.Time) *catalog.Meta {
	t.Helper()
	hash, err := catalog.Key(catalog.Inputs{Name: name, InitCmd: created.String()})
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := c.Lock(hash)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	dir, err := c.Stage(hash)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data", "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "app", "t.ibd"), make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &catalog.Meta{Name: name, Hash: hash, Created: created, LastUsed: created, Databases: []string{"app"},
		User: "pristine", Password: "pw", Accounts: catalog.AccountsVersion, Backend: c.Backend().Name()}
	if err := c.Publish(dir, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCatalogLifecycle: publish, list, get (name, hash, prefix), touch,
// supersede, remove and gc on a catalog alone.
func TestCatalogLifecycle(t *testing.T) {
	c := newCatalog(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := publish(t, c, "app", 1<<20, t0)
	b := publish(t, c, "app", 1<<20, t0.Add(time.Hour))
	o := publish(t, c, "other", 1<<20, t0.Add(2*time.Hour))
	if a.Bytes < 1<<20 {
		t.Fatalf("Publish recorded %d bytes for a 1 MiB data directory", a.Bytes)
	}
	if _, err := os.Stat(filepath.Join(c.Root().Data(), "templates", ".build-"+a.Hash)); !os.IsNotExist(err) {
		t.Fatalf("the build directory is still there after Publish: %v", err)
	}
	all, err := c.List()
	if err != nil || len(all) != 3 || all[0].Hash != o.Hash || all[2].Hash != a.Hash {
		t.Fatalf("List = %v, %v; want other, app (new), app (old)", all, err)
	}
	for ref, want := range map[string]string{"app": b.Hash, a.Hash: a.Hash, o.Hash[:8]: o.Hash} {
		if m, err := c.Get(ref); err != nil || m.Hash != want {
			t.Errorf("Get(%q) = %v, %v; want %s", ref, m, err, want[:12])
		}
	}
	if _, err := c.Get("nope"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Get(nope) = %v, want ErrNotFound", err)
	}
	removed, kept, err := c.Supersede(b, func(h string) bool { return false })
	if err != nil || len(removed) != 1 || removed[0].Hash != a.Hash || len(kept) != 0 {
		t.Fatalf("Supersede = %v %v %v; want the older app removed", removed, kept, err)
	}
	// gc removes the least recently used first: other was made last, but
	// app is touched now.
	if err := c.Touch(b); err != nil {
		t.Fatal(err)
	}
	gone, err := c.GC(b.Bytes, nil)
	if err != nil || len(gone) != 1 || gone[0].Hash != o.Hash {
		t.Fatalf("GC = %v, %v; want other removed", gone, err)
	}
	if err := c.Remove(b, func(string) bool { return true }); !errors.Is(err, catalog.ErrInUse) {
		t.Fatalf("Remove of a template in use = %v, want ErrInUse", err)
	}
	if err := c.Remove(b, nil); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(c.Root().Data(), "templates"))
	for _, e := range ents {
		t.Errorf("left in the catalog after removing every template: %s", e.Name())
	}
}

// TestLocksAndKilledBuilds: TryLock reports a held lock as busy, and gc
// removes the directory of a killed build but never a live one's.
func TestLocksAndKilledBuilds(t *testing.T) {
	c := newCatalog(t)
	live, killed := strings.Repeat("a", 64), strings.Repeat("b", 64)
	unlock, err := c.Lock(live)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if busy, err := c.TryLock(live); err != nil || busy != nil {
		t.Fatalf("TryLock of a held lock = %v, %v; want busy", busy != nil, err)
	}
	liveDir, err := c.Stage(live)
	if err != nil {
		t.Fatal(err)
	}
	unlockKilled, err := c.Lock(killed)
	if err != nil {
		t.Fatal(err)
	}
	killedDir, err := c.Stage(killed)
	if err != nil {
		t.Fatal(err)
	}
	unlockKilled() // the builder died
	if _, err := c.GC(0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("gc removed a live build's directory: %v", err)
	}
	if _, err := os.Stat(killedDir); !os.IsNotExist(err) {
		t.Errorf("gc left a killed build's directory: %v", err)
	}
}
