package client_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/pristinetest"
)

var bin string

func TestMain(m *testing.M) {
	if bin = os.Getenv("PRISTINE_BIN"); bin != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "client-bin-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "pristine")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/pristinedb/pristine/cmd/pristine").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func write(t *testing.T, dir string, files map[string]string) {
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestContentKey(t *testing.T) {
	base := map[string]string{"m/001.sql": "CREATE TABLE a (id INT);", "m/sub/002.sql": "CREATE TABLE b (id INT);"}
	key := func(files map[string]string, extra ...string) string {
		dir := t.TempDir()
		write(t, dir, files)
		k, err := client.ContentKey([]string{filepath.Join(dir, "m")}, extra...)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k0 := key(base)
	cases := []struct {
		name  string
		files map[string]string
		extra []string
		same  bool
	}{
		{"same files elsewhere", base, nil, true},
		{"a byte changed", map[string]string{"m/001.sql": "CREATE TABLE a (id BIGINT);", "m/sub/002.sql": base["m/sub/002.sql"]}, nil, false},
		{"a file renamed", map[string]string{"m/001.sql": base["m/001.sql"], "m/sub/003.sql": base["m/sub/002.sql"]}, nil, false},
		{"a file added", map[string]string{"m/001.sql": base["m/001.sql"], "m/sub/002.sql": base["m/sub/002.sql"], "m/x": ""}, nil, false},
		{"an extra string", base, []string{"tool 1.2"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := key(c.files, c.extra...); (got == k0) != c.same {
				t.Fatalf("key %s vs %s: same=%v, want %v", got, k0, got == k0, c.same)
			}
		})
	}
	// The Python and PHP clients' tests check the same vector.
	if got := key(base, "v1"); got != "469c6fadcf0cdddd236881f69b788abcb1752e48af4ddca5907462d3e676630d" {
		t.Fatalf("the cross-language vector changed: %s", got)
	}
	if _, err := client.ContentKey([]string{filepath.Join(t.TempDir(), "nope")}); err == nil {
		t.Fatal("a pattern matching nothing gave a key")
	}
}

// TestEnsureTemplateBuildsOnce: concurrent callers over the socket and
// over TCP build a template once; the others wait and get the same hash.
func TestEnsureTemplateBuildsOnce(t *testing.T) {
	mariadbtest.Binary(t)
	d := pristinetest.Serve(t, bin)
	tcp := client.NewTCP(d.Addr, d.Token)
	if err := client.NewTCP(d.Addr, "wrong").Health(context.Background()); err == nil {
		t.Fatal("a wrong token was accepted over TCP")
	}
	t.Setenv("PRISTINE_ROOT", d.Root)
	t.Setenv("PRISTINE_URL", "http://"+d.Addr)
	fromEnv, err := client.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	clients := []*client.Client{d.Client, tcp, fromEnv, d.Client}
	var builds atomic.Int32
	build := func(ctx context.Context, conn *server.TemplateAnswer) error {
		builds.Add(1)
		if conn.DSN == "" || conn.Database != "shop" {
			return errors.New("the build session lacks a connection")
		}
		return nil
	}
	hashes := make([]string, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := c.EnsureTemplate(context.Background(), server.TemplateRequest{Name: "shop", Key: "k1", Database: "shop"}, build, 0)
			if err != nil {
				t.Error(err)
				return
			}
			hashes[i] = a.Hash
			if err := c.EnsurePool(context.Background(), "shop", a.Hash, 1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Fatalf("built %d times, want once", n)
	}
	for _, h := range hashes {
		if h == "" || h != hashes[0] {
			t.Fatalf("callers got different templates: %v", hashes)
		}
	}
	l, err := tcp.LeaseWait(context.Background(), server.LeaseRequest{Template: "shop"})
	if err != nil || l.PID != os.Getpid() {
		t.Fatalf("lease over TCP: %+v %v, want this process as its holder", l, err)
	}
	if _, err := tcp.Release(context.Background(), l.ID, true); err != nil {
		t.Fatal(err)
	}
}

// EnsurePool grows a smaller pool of the same template to the size asked
// for, says so, and a lease on the grown slot needs no release.
func TestEnsurePoolGrows(t *testing.T) {
	c, a := shopTemplate(t, "k-grow")
	var told []string
	c.Notify = func(msg string) { told = append(told, msg) }
	if err := c.EnsurePool(context.Background(), "shop", a.Hash, 1); err != nil {
		t.Fatal(err)
	}
	held, err := c.LeaseWait(context.Background(), server.LeaseRequest{Template: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePool(context.Background(), "shop", a.Hash, 2); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || !strings.Contains(told[0], "grew it to 2") {
		t.Fatalf("told %q, want one notice of the growth to 2", told)
	}
	// The only other slot is the new one: a long wait cannot time out here.
	l, err := c.LeaseWait(context.Background(), server.LeaseRequest{Template: "shop", Wait: 3000})
	if err != nil || l.Slot == held.Slot {
		t.Fatalf("lease after growing: %+v, %v; want the new slot", l, err)
	}
	if err := c.EnsurePool(context.Background(), "shop", a.Hash, 2); err != nil || len(told) != 1 {
		t.Fatalf("EnsurePool at the pool's size: %v, told %q; want nothing done", err, told)
	}
}

// shopTemplate serves a daemon for t and ensures on it an empty template
// "shop" of key.
func shopTemplate(t *testing.T, key string) (*client.Client, *server.TemplateAnswer) {
	t.Helper()
	mariadbtest.Binary(t)
	c := pristinetest.Serve(t, bin).Client
	a, err := c.EnsureTemplate(context.Background(), server.TemplateRequest{Name: "shop", Key: key}, func(context.Context, *server.TemplateAnswer) error { return nil }, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, a
}

// TestEnsurePoolFirstSlot: EnsurePool of a pool that is not up returns as
// soon as its first slot answers, the others still starting, and the
// lease that follows is served at once.
func TestEnsurePoolFirstSlot(t *testing.T) {
	c, a := shopTemplate(t, "k-first")
	ctx := context.Background()
	const size = 12 // start for a second or more even on MariaDB's reflinks; MySQL's copies of ~150 MiB fit beside the other tests
	if err := c.EnsurePool(ctx, "shop", a.Hash, size); err != nil {
		t.Fatal(err)
	}
	st, err := c.Pool(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != size || st.States["ready"] == size {
		t.Fatalf("EnsurePool returned with %v of %d slots; want it back at the first slot, the others starting", st.States, size)
	}
	l, err := c.LeaseWait(ctx, server.LeaseRequest{Template: "shop", Wait: 60})
	if err != nil {
		t.Fatalf("lease after EnsurePool: %v", err)
	}
	if _, err := c.Release(ctx, l.ID, true); err != nil {
		t.Fatal(err)
	}
}

// TestPrefetchDB: a lease from PrefetchDB comes with its connection made,
// Release returns it in the background, and Close releases the lease
// taken ahead, waits for the releases and reports the one that failed.
func TestPrefetchDB(t *testing.T) {
	c, a := shopTemplate(t, "k-prefetch")
	ctx := context.Background()
	if err := c.EnsurePool(ctx, "shop", a.Hash, 2); err != nil {
		t.Fatal(err)
	}
	p := c.PrefetchDB(server.LeaseRequest{Template: "shop", Holder: "prefetch", Wait: 60})
	for i := range 3 {
		l, db, err := p.LeaseDB(ctx)
		if err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		if open := db.Stats().OpenConnections; open != 1 {
			t.Errorf("lease %d comes with %d connections open, want 1", i, open)
		}
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("lease %d: SELECT 1: %d, %v", i, one, err)
		}
		db.Close()
		p.Release(l.ID, true)
	}
	p.Release("no-such-lease", true)
	err := p.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "release lease no-such-lease") {
		t.Fatalf("Close after a release of an unknown lease: %v; want that release's failure", err)
	}
	ls, err := c.Leases(ctx)
	if err != nil || len(ls) != 0 {
		t.Fatalf("leases after Close: %+v, %v; want none (the releases done, the lease taken ahead released)", ls, err)
	}
}
