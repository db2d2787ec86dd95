package pristinetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/pristinetest"
)

// helperEnv makes the test binary act as a test process a test drives.
const helperEnv = "PRISTINETEST_HELPER"

func migrations(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "001_canary.sql"), []byte("CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO canary VALUES (1, 'pristine');\n"), 0o644)
	return dir
}

func migrateFrom(dir string, runs *atomic.Int32) func(context.Context, *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error {
		runs.Add(1)
		b, err := os.ReadFile(filepath.Join(dir, "001_canary.sql"))
		if err != nil {
			return err
		}
		_, err = db.ExecContext(ctx, string(b))
		return err
	}
}

func canary(t *testing.T, db *sql.DB) string {
	t.Helper()
	var v string
	if err := db.QueryRow("SELECT v FROM canary WHERE id = 1").Scan(&v); err != nil {
		t.Fatalf("read canary: %v", err)
	}
	return v
}

// TestParallelTestsGetPristineDatabases: parallel tests each get a
// database of their own with the template's rows, the template is built
// once, and a released database comes back pristine.
func TestParallelTestsGetPristineDatabases(t *testing.T) {
	mariadbtest.Binary(t)
	d := pristinetest.Serve(t, bin)
	dir := migrations(t)
	var runs atomic.Int32
	opts := []pristinetest.Option{pristinetest.Client(d.Client), pristinetest.Template("gotest"),
		pristinetest.Files(dir), pristinetest.Migrate(migrateFrom(dir, &runs)), pristinetest.PoolSize(2)}
	var mu sync.Mutex
	seen := map[string]bool{}
	t.Run("group", func(t *testing.T) {
		for i := range 4 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				db := pristinetest.New(t, opts...)
				if v := canary(t, db.DB); v != "pristine" {
					t.Fatalf("a fresh lease reads %q, want the template's row", v)
				}
				if _, err := db.Exec("UPDATE canary SET v = ? WHERE id = 1", fmt.Sprint("test", i)); err != nil {
					t.Fatal(err)
				}
				if v := canary(t, db.DB); v != fmt.Sprint("test", i) {
					t.Fatalf("a test sees %q after its own write", v)
				}
				mu.Lock()
				seen[db.Lease.ID] = true
				mu.Unlock()
			})
		}
	})
	if n := runs.Load(); n != 1 {
		t.Fatalf("the template was migrated %d times, want once", n)
	}
	if len(seen) != 4 {
		t.Fatalf("4 tests got %d distinct leases", len(seen))
	}
	ls, err := d.Client.Leases(context.Background())
	if err != nil || len(ls) != 0 {
		t.Fatalf("leases left after the tests: %+v %v", ls, err)
	}
}

// fakeT records a Fatalf instead of failing the real test.
type fakeT struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeT) Helper() {}

// fatalOf runs f with a fakeT and returns the message it stopped with.
func fatalOf(t *testing.T, f func(tb testing.TB)) string {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ft)
	}()
	<-done
	return ft.msg
}

// TestFaultMessages: each fault the test author can meet stops the test
// with a message that names the cause and the fix.
func TestFaultMessages(t *testing.T) {
	mariadbtest.Binary(t)
	d := pristinetest.Serve(t, bin)
	dir := migrations(t)
	var runs atomic.Int32
	good := migrateFrom(dir, &runs)
	bad := func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(ctx, "CREATE TABLE broken (")
		return err
	}
	base := []pristinetest.Option{pristinetest.Template("faults"), pristinetest.Files(dir), pristinetest.PoolSize(1)}
	opt := func(extra ...pristinetest.Option) []pristinetest.Option {
		return append(append([]pristinetest.Option{}, base...), extra...)
	}
	var held *pristinetest.DB
	cases := []struct {
		name string
		opts []pristinetest.Option
		want []string // in the message; none: no failure
	}{
		{"no daemon", opt(pristinetest.Client(client.New(filepath.Join(t.TempDir(), "pristine.sock")))),
			[]string{"no pristine daemon is running", "pristine serve"}},
		{"build fails", opt(pristinetest.Client(d.Client), pristinetest.Migrate(bad)),
			[]string{"build failed", "aborted", "You have an error in your SQL syntax"}},
		{"no way to build", opt(pristinetest.Client(d.Client), pristinetest.KeyExtra("other")),
			[]string{"nothing was given to build it"}},
		{"build after a failed one", opt(pristinetest.Client(d.Client), pristinetest.Migrate(good)), nil},
		{"lease timeout", opt(pristinetest.Client(d.Client), pristinetest.Migrate(good), pristinetest.Wait(time.Second)),
			[]string{"lease a database of faults", "no"}},
		{"no files", []pristinetest.Option{pristinetest.Client(d.Client)}, []string{"pristinetest.Files"}},
		{"migrate keyed by no file", []pristinetest.Option{pristinetest.Client(d.Client), pristinetest.Template("unkeyed"),
			pristinetest.KeyExtra("migrate v1"), pristinetest.Migrate(good)}, []string{"pristinetest.Files(", "pristinetest.AllowStale()", "old template"}},
	}
	outer := t // owns the leases, so the held one outlives its case
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := fatalOf(outer, func(tb testing.TB) {
				db := pristinetest.New(tb, c.opts...)
				if c.want == nil {
					held = db // holds the pool's only slot for the next case
				}
			})
			if c.want == nil {
				if msg != "" {
					t.Fatalf("unexpected failure: %s", msg)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Fatalf("message %q lacks %q", msg, w)
				}
			}
		})
	}
	if held == nil || canary(t, held.DB) != "pristine" {
		t.Fatal("the build after a failed one did not give a working database")
	}
}

// TestChangedMigrationGetsNewTemplate: a migration file (named by Files)
// that changes between two tests gets a new template, with the changed
// migration's rows, not the old one.
func TestChangedMigrationGetsNewTemplate(t *testing.T) {
	mariadbtest.Binary(t)
	d := pristinetest.Serve(t, bin)
	dir := migrations(t)
	var runs atomic.Int32
	opts := []pristinetest.Option{pristinetest.Client(d.Client), pristinetest.Template("changing"),
		pristinetest.Files(dir), pristinetest.Migrate(migrateFrom(dir, &runs)), pristinetest.PoolSize(1)}
	var hashes []string
	for _, want := range []string{"pristine", "changed"} {
		t.Run(want, func(t *testing.T) {
			db := pristinetest.New(t, opts...)
			if v := canary(t, db.DB); v != want {
				t.Fatalf("the template's row reads %q, want %q: a stale template", v, want)
			}
			st, err := d.Client.Pool(context.Background(), "changing")
			if err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, st.Hash)
		})
		os.WriteFile(filepath.Join(dir, "001_canary.sql"), []byte("CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO canary VALUES (1, 'changed');\n"), 0o644)
	}
	if runs.Load() != 2 || len(hashes) != 2 || hashes[0] == hashes[1] {
		t.Fatalf("migrations ran %d times, templates %v: want two builds of two templates", runs.Load(), hashes)
	}
}

// TestKilledTestProcessLeaseIsReclaimed: a test process killed mid-test
// leaves a lease naming its pid; the daemon reclaims it.
func TestKilledTestProcessLeaseIsReclaimed(t *testing.T) {
	mariadbtest.Binary(t)
	d := pristinetest.Serve(t, bin)
	dir := migrations(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLease$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=hold", "PRISTINE_ROOT="+d.Root, "PRISTINETEST_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "LEASED ") {
		n, err := out.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("the test process ended before it leased: %s", got.String())
		}
	}
	ls, err := d.Client.Leases(context.Background())
	if err != nil || len(ls) != 1 || ls[0].PID != cmd.Process.Pid {
		t.Fatalf("the held lease: %+v %v, want one with pid %d", ls, err, cmd.Process.Pid)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for range 100 {
		if ls, err = d.Client.Leases(context.Background()); err == nil && len(ls) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(ls) != 0 {
		t.Fatalf("the killed process's lease was not reclaimed: %+v", ls)
	}
	st, err := d.Client.Pool(context.Background(), "killed")
	if err != nil || st.Stats.HolderGone != 1 {
		t.Fatalf("pool stats after the kill: %+v %v, want one lease reclaimed as holder gone", st, err)
	}
}

// TestHelperHoldLease is the test process TestKilledTestProcessLeaseIsReclaimed kills.
func TestHelperHoldLease(t *testing.T) {
	if os.Getenv(helperEnv) != "hold" {
		t.Skip("a helper process of TestKilledTestProcessLeaseIsReclaimed")
	}
	dir := os.Getenv("PRISTINETEST_DIR")
	var runs atomic.Int32
	db := pristinetest.New(t, pristinetest.Template("killed"), pristinetest.Files(dir), pristinetest.Migrate(migrateFrom(dir, &runs)), pristinetest.PoolSize(1))
	fmt.Printf("LEASED %s\n", db.Lease.ID)
	time.Sleep(time.Minute) // killed long before
}

// failedT is a test that has failed, whose logs are recorded.
type failedT struct {
	testing.TB
	mu   sync.Mutex
	logs strings.Builder
}

func (f *failedT) Failed() bool { return true }
func (f *failedT) Helper()      {}
func (f *failedT) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(&f.logs, format+"\n", args...)
}

// TestKeepOnFailure: a failed test's database is kept, not reset, and its
// DSN is logged; a passing test's database is released.
func TestKeepOnFailure(t *testing.T) {
	mariadbtest.Binary(t)
	d := pristinetest.Serve(t, bin)
	dir := migrations(t)
	var runs atomic.Int32
	ft := &failedT{}
	var id string
	t.Run("failing", func(t *testing.T) {
		ft.TB = t
		db := pristinetest.New(ft, pristinetest.Client(d.Client), pristinetest.Template("keep"), pristinetest.Files(dir),
			pristinetest.Migrate(migrateFrom(dir, &runs)), pristinetest.PoolSize(1), pristinetest.KeepOnFailure())
		id = db.Lease.ID
		if _, err := db.Exec("UPDATE canary SET v = 'evidence'"); err != nil {
			t.Fatal(err)
		}
	})
	l, err := d.Client.GetLease(context.Background(), id)
	if err != nil || !l.Kept {
		t.Fatalf("the failed test's lease: %+v %v, want it kept", l, err)
	}
	if !strings.Contains(ft.logs.String(), l.DSN) || !strings.Contains(ft.logs.String(), "pristine release "+id) {
		t.Fatalf("the log does not give the DSN and how to release it:\n%s", ft.logs.String())
	}
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v := canary(t, db); v != "evidence" {
		t.Fatalf("the kept database reads %q, want the failed test's write", v)
	}
	if _, err := d.Client.Release(context.Background(), id, false); err != nil {
		t.Fatal(err)
	}
}

// TestFork: fixtures written into one test's database are forked once;
// the fork's leases start from that state, the seed's database stays
// usable, and a second Fork with the same key is the same template.
func TestFork(t *testing.T) {
	mariadbtest.Binary(t)
	d := pristinetest.Serve(t, bin)
	dir := migrations(t)
	var runs atomic.Int32
	base := []pristinetest.Option{pristinetest.Client(d.Client), pristinetest.Template("forkbase"),
		pristinetest.Files(dir), pristinetest.Migrate(migrateFrom(dir, &runs)), pristinetest.PoolSize(1)}
	seed := pristinetest.New(t, base...)
	if _, err := seed.Exec("INSERT INTO canary VALUES (2, 'fixture')"); err != nil {
		t.Fatal(err)
	}
	fixtures := pristinetest.Fork(t, seed, "forkbase-fixtures", "fixtures-v1", base...)
	if _, err := seed.Exec("INSERT INTO canary VALUES (3, 'seed only')"); err != nil {
		t.Fatalf("the seed's database after the fork: %v", err)
	}
	db := pristinetest.New(t, fixtures...)
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM canary").Scan(&n); err != nil || n != 2 {
		t.Fatalf("a lease of the fork has %d rows (%v), want the template's and the fixture's", n, err)
	}
	a, err := d.Client.Fork(context.Background(), seed.Lease.ID, "forkbase-fixtures", "fixtures-v1")
	if err != nil || a.Built || a.Template.Name != "forkbase-fixtures" || a.Template.ParentName != "forkbase" {
		t.Fatalf("the same key again: %+v, %v; want the fork made before", a, err)
	}
}

// TestPrefetch: with Prefetch, each test after the first gets the lease
// taken ahead while the test before it ran (a lease whose holder says so)
// with its connection open already, every one of them pristine though
// each test writes, and, the releases done in the background, one lease
// stays taken ahead once the tests are over.
func TestPrefetch(t *testing.T) {
	mariadbtest.Binary(t)
	d := pristinetest.Serve(t, bin)
	dir := migrations(t)
	var runs atomic.Int32
	opts := []pristinetest.Option{pristinetest.Client(d.Client), pristinetest.Template("prefetch"),
		pristinetest.Files(dir), pristinetest.Migrate(migrateFrom(dir, &runs)), pristinetest.PoolSize(2), pristinetest.Prefetch()}
	ctx := context.Background()
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			db := pristinetest.New(t, opts...)
			if open := db.Stats().OpenConnections; i > 0 && open != 1 {
				t.Fatalf("test %d starts with %d connections open, want the one made ahead", i, open)
			}
			if v := canary(t, db.DB); v != "pristine" {
				t.Fatalf("test %d reads %q, want the template's row", i, v)
			}
			if _, err := db.Exec("UPDATE canary SET v = 'written' WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				return
			}
			// The next lease is taken once a slot is free (the one the test
			// before released is being reset).
			var mine, ahead bool
			var ls []api.Lease
			for deadline := time.Now().Add(30 * time.Second); !ahead && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				var err error
				if ls, err = d.Client.Leases(ctx); err != nil {
					t.Fatal(err)
				}
				mine, ahead = false, false
				for _, l := range ls {
					mine = mine || l.ID == db.Lease.ID
					ahead = ahead || (l.ID != db.Lease.ID && l.Holder == "pristinetest: taken ahead")
				}
			}
			if !mine || !ahead || db.Lease.Holder != "pristinetest: taken ahead" {
				t.Fatalf("test %d: its lease (holder %q) was not the one taken ahead, or none is taken for the next (leases %d)", i, db.Lease.Holder, len(ls))
			}
		})
	}
	var ls []api.Lease
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ls, err = d.Client.Leases(ctx); err != nil || len(ls) == 1 {
			break
		}
	}
	if err != nil || len(ls) != 1 {
		t.Fatalf("leases after the tests and their releases: %d (%v), want the one taken ahead", len(ls), err)
	}
}
