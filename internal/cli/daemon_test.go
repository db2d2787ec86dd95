package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/template"
)

// inProcessDaemon serves root's API from this test process until the test
// ends, as `pristine serve` would.
func inProcessDaemon(t *testing.T, rootPath string) {
	t.Helper()
	root, err := rootdir.Open(rootPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	b, err := template.Open(ctx, root, "auto")
	if err != nil {
		stop()
		t.Skipf("no template builder here (%v)", err)
	}
	ln, err := server.Listen(root)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	srv, err := server.New(ctx, root, b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		ln.Close()
		stop()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(ctx, ln, nil) }()
	t.Cleanup(func() { stop(); wg.Wait() })
}

// TestCommandsAgainstADaemon builds a template and serves a pool of one
// slot through an in-process daemon on a temporary root, then runs the
// daemon's commands in-process: a size the daemon refuses exits 2, a pool
// too big for the machine exits 5 (does not fit), a
// second lease of the one slot exits 4 (no free database in time), and
// lease, release, status and down work and print what they should.
func TestCommandsAgainstADaemon(t *testing.T) {
	if _, err := mariadb.FindBinary(context.Background()); err != nil {
		t.Skipf("no server binary: %v", err)
	}
	noSpawn(t)
	root := filepath.Join(mariadbtest.TestDir(t), "root")
	sqlFile := filepath.Join(t.TempDir(), "app.sql")
	if err := os.WriteFile(sqlFile, []byte("CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1),(2);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := pristine(t, root, "", "template", "build", "app", "--from-sql", sqlFile); r.code != 0 || !strings.Contains(r.out, "template app built") {
		t.Fatalf("template build: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	// The template moves to another root through export and import.
	if r := pristine(t, root, "", "template", "ls"); r.code != 0 || !strings.Contains(r.out, "app") {
		t.Fatalf("template ls: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	exp := pristine(t, root, "", "template", "export", "app")
	if exp.code != 0 || len(exp.out) == 0 || !strings.Contains(exp.err, "exported template app") {
		t.Fatalf("template export: exit %d, %d bytes out, stderr %q", exp.code, len(exp.out), exp.err)
	}
	other := filepath.Join(mariadbtest.TestDir(t), "root")
	for _, verb := range []string{"imported", "already here"} {
		if r := pristine(t, other, exp.out, "template", "import", "-"); r.code != 0 || !strings.Contains(r.out, "template app "+verb) {
			t.Fatalf("template import: exit %d, stdout %q, stderr %q; want %q", r.code, r.out, r.err, verb)
		}
	}
	inProcessDaemon(t, root)
	defer pristine(t, root, "", "pool", "down", "--all")

	if r := pristine(t, root, "", "pool", "up", "--template", "app", "--size", "100000"); r.code != ExitBadInput || !strings.Contains(r.err, "size must be") {
		t.Fatalf("pool up --size 100000: exit %d, stderr %q; want %d (the daemon's 400: bad input)", r.code, r.err, ExitBadInput)
	}
	if r := pristine(t, root, "", "pool", "up", "--template", "app", "--size", "4096", "--slot-memory", "8G"); r.code != ExitDoesNotFit || !strings.Contains(r.err, "does not fit") {
		t.Fatalf("pool up --size 4096: exit %d, stderr %q; want %d (does not fit)", r.code, r.err, ExitDoesNotFit)
	}
	if r := pristine(t, root, "", "pool", "up", "--template", "app", "--size", "1"); r.code != 0 || !strings.Contains(r.out, "pool app: 1 slots ready") {
		t.Fatalf("pool up: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	r := pristine(t, root, "", "--json", "lease", "--template", "app", "--holder", "cli test")
	var l struct{ ID, DSN, Password string }
	if r.code != 0 || json.Unmarshal([]byte(r.out), &l) != nil || l.ID == "" || l.Password == "" {
		t.Fatalf("lease --json: exit %d, stdout %q, stderr %q; want a lease with its credentials", r.code, r.out, r.err)
	}
	if r := pristine(t, root, "", "lease", "--template", "app", "--wait", "300ms"); r.code != ExitNoFreeDB || !strings.Contains(r.err, "in time") {
		t.Fatalf("second lease of a one-slot pool: exit %d, stderr %q; want %d (no free database in time)", r.code, r.err, ExitNoFreeDB)
	}
	if r := pristine(t, root, "", "lease", "ls"); r.code != 0 || !strings.Contains(r.out, l.ID) || !strings.Contains(r.out, "cli test") {
		t.Fatalf("lease ls: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	if r := pristine(t, root, "", "pool", "status"); r.code != 0 || !strings.Contains(r.out, "pool app") || !strings.Contains(r.out, "1 leased") {
		t.Fatalf("pool status: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	if r := pristine(t, root, "", "release", l.ID); r.code != 0 || !strings.Contains(r.err, "released "+l.ID) {
		t.Fatalf("release: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	if r := pristine(t, root, "", "release", l.ID); r.code != ExitFailed {
		t.Fatalf("release twice: exit %d, stderr %q; want %d", r.code, r.err, ExitFailed)
	}
	if r := pristine(t, root, "", "pool", "down", "--template", "app"); r.code != 0 || !strings.Contains(r.out, "pool app down") {
		t.Fatalf("pool down: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
}
