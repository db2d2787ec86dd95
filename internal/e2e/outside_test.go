package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// outsideTest is the test of a module that is not pristine: it imports the
// client, the wire types and pristinetest by their module path, builds a
// template with its own build function, leases, and uses pristinetest.New.
// With $PRISTINE_TEST_BIN unset it only compiles.
const outsideTest = `package outside_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/pristinetest"
)

func TestOutside(t *testing.T) {
	bin := os.Getenv("PRISTINE_TEST_BIN")
	if bin == "" {
		t.Skip("PRISTINE_TEST_BIN is not set: compiled only")
	}
	d := pristinetest.Serve(t, bin)
	ctx := context.Background()

	key, err := client.ContentKey(nil, "outside-v1")
	if err != nil {
		t.Fatal(err)
	}
	var build client.BuildFunc = func(ctx context.Context, conn *api.TemplateAnswer) error {
		if conn.Password.Value() == "" {
			t.Error("the build answer carries no password")
		}
		db, err := sql.Open("mysql", conn.DSN)
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "CREATE TABLE seed (id INT PRIMARY KEY)"); err != nil {
			return err
		}
		_, err = db.ExecContext(ctx, "INSERT INTO seed VALUES (1), (2), (3)")
		return err
	}
	a, err := d.Client.EnsureTemplate(ctx, api.TemplateRequest{Name: "outside", Key: key}, build, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Client.EnsurePool(ctx, "outside", a.Hash, 1); err != nil {
		t.Fatal(err)
	}
	l, err := d.Client.Lease(ctx, api.LeaseRequest{Template: "outside", Holder: "outside", Wait: 60})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM seed").Scan(&n); err != nil || n != 3 {
		t.Errorf("seed rows of the lease: %d %v, want 3", n, err)
	}
	db.Close()
	if _, err := d.Client.Release(ctx, l.ID, false); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "1.sql"), []byte("CREATE TABLE t (id INT)"), 0o644); err != nil {
		t.Fatal(err)
	}
	pdb := pristinetest.New(t, pristinetest.Client(d.Client), pristinetest.Template("outside-helper"),
		pristinetest.Files(dir), pristinetest.PoolSize(1),
		pristinetest.Migrate(func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(ctx, "CREATE TABLE t (id INT)")
			return err
		}))
	if _, err := pdb.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Errorf("insert into the pristinetest database: %v", err)
	}
}
`

// needGo skips a test that compiles Go code where there is no Go
// toolchain: in the server matrix's roots (scripts/servers.sh sets
// PRISTINE_SERVER_MATRIX), which get compiled test binaries and no Go.
// What such a test checks is the module's compilation, the same for every
// server; anywhere else a missing go fails the test.
func needGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		if m := os.Getenv("PRISTINE_SERVER_MATRIX"); m != "" {
			t.Skipf("server matrix %s: no Go toolchain in the root (this test compiles a module; it runs on the host)", m)
		}
		t.Fatalf("this test compiles a module and needs go on PATH: %v", err)
	}
}

// checkout is the root of this module's source tree.
func checkout(t *testing.T) string {
	t.Helper()
	needGo(t)
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "go.mod") {
		t.Fatalf("find the checkout's go.mod: %v (%s)", err, out)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// goVersion is the go directive of the checkout's go.mod.
func goVersion(t *testing.T, root string) string {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("the checkout's go.mod has no go directive")
	return ""
}

// TestImportFromOutside builds and runs a test in a module outside this
// tree that requires pristine by its module path (replaced by the
// checkout): the client and pristinetest must not expose internal/ types,
// or that module fails to compile with "use of internal package".
func TestImportFromOutside(t *testing.T) {
	root := checkout(t)
	dir := t.TempDir()
	gomod := "module example.com/outside\n\ngo " + goVersion(t, root) + "\n\n" +
		"require github.com/pristinedb/pristine v0.0.0\n\n" +
		"replace github.com/pristinedb/pristine => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum")) // the driver's hashes, without the checksum database
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "outside_test.go": []byte(outsideTest)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	run := func(extra []string, args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, append(env, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in a module outside the tree: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(nil, "vet", "./...")
	mariadbtest.Binary(t) // skips, saying why, when there is no server to run it against
	out := run([]string{"PRISTINE_TEST_BIN=" + bin}, "test", "-count=1", "-v", "-run", "TestOutside", "./...")
	if !strings.Contains(out, "--- PASS: TestOutside") {
		t.Errorf("the outside module's test did not run and pass:\n%s", out)
	}
}

// TestClientDependencies checks that a program importing the client and
// pristinetest pulls in none of the daemon: no internal/ package, no
// metrics, store or compression library.
func TestClientDependencies(t *testing.T) {
	needGo(t)
	cmd := exec.Command("go", "list", "-deps", "github.com/pristinedb/pristine/client",
		"github.com/pristinedb/pristine/pristinetest", "github.com/pristinedb/pristine/api")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, p := range deps {
		for _, bad := range []string{"github.com/pristinedb/pristine/internal/", "prometheus", "bbolt", "klauspost"} {
			if strings.Contains(p, bad) {
				t.Errorf("the client's dependencies include %s: it must import only api, the standard library and the MySQL driver", p)
			}
		}
	}
}
