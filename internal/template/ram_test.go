package template_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
	"golang.org/x/sys/unix"
)

// ramBuilder is a builder on a btrfs scratch store that stages its builds
// in a tmpfs directory of the test's own, and records its progress.
func ramBuilder(t *testing.T) (*template.Builder, string, func() string) {
	t.Helper()
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	ram, err := mariadbtest.TempDir("/dev/shm", "pristine-ram-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ram) })
	st.RAM.Dir = ram
	var mu sync.Mutex
	var log strings.Builder
	st.Progress = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&log, format+"\n", args...)
	}
	return st, ram, func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
}

func fsType(t *testing.T, path string) int64 {
	t.Helper()
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		t.Fatal(err)
	}
	return sfs.Type
}

func assertEmpty(t *testing.T, dir, when string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Errorf("%s: %s holds %d entries (%s...), want none", when, dir, len(ents), ents[0].Name())
	}
}

// A build session runs its server in a private directory on tmpfs; the
// finished template is moved onto the store's btrfs and serves clones.
func TestBuildSessionRunsInRAM(t *testing.T) {
	st, ram, _ := ramBuilder(t)
	ctx := context.Background()
	ss, _, err := st.Begin(ctx, template.BuildOptions{Name: "ramapp", Key: "k1", Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := ss.Inst.Open("")
	if err != nil {
		ss.Abort()
		t.Fatal(err)
	}
	var datadir string
	if err := db.QueryRowContext(ctx, "SELECT @@datadir").Scan(&datadir); err != nil {
		ss.Abort()
		t.Fatal(err)
	}
	if !strings.HasPrefix(datadir, ram+"/") || fsType(t, datadir) != unix.TMPFS_MAGIC {
		t.Errorf("build server's @@datadir = %s, want under the tmpfs %s", datadir, ram)
	}
	stage := filepath.Dir(filepath.Clean(datadir))
	if fi, err := os.Stat(stage); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("staging directory %s: %v, %v; want mode 0700", stage, fi.Mode(), err)
	}
	for _, q := range []string{"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "ALTER TABLE t ADD COLUMN w INT", "INSERT INTO t VALUES (1, 'a', 2)"} {
		if _, err := db.ExecContext(ctx, "USE ramapp"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, q); err != nil {
			ss.Abort()
			t.Fatal(err)
		}
	}
	db.Close()
	m, err := ss.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon logs where the session's time went: pristine's steps
	// around the client's own.
	phases := map[string]bool{}
	for _, ph := range ss.Timeline().Phases() {
		phases[ph.Name] = true
	}
	for _, want := range []string{template.PhaseRAMCopy, template.PhaseStart, template.PhaseClient, template.PhaseStop, template.PhaseFile, template.PhasePublish} {
		if !phases[want] {
			t.Errorf("session timeline %q has no phase %q", ss.Timeline(), want)
		}
	}
	assertEmpty(t, ram, "after the build")
	data := st.Catalog().DataDir(m.Hash)
	if fsType(t, data) != unix.BTRFS_SUPER_MAGIC {
		t.Errorf("published template %s is not on the store's btrfs", data)
	}
	if m.Bytes == 0 {
		t.Errorf("published template: Bytes = 0")
	}
	r, err := st.Start(ctx, m, "ramclone")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cdb, err := r.Inst.Open("ramapp")
	if err != nil {
		t.Fatal(err)
	}
	defer cdb.Close()
	var w int
	if err := cdb.QueryRowContext(ctx, "SELECT w FROM t WHERE id = 1").Scan(&w); err != nil || w != 2 {
		t.Fatalf("clone of the template: w = %d, %v; want 2", w, err)
	}
	// A pool's slots clone it (btrfs snapshots) and serve leases.
	p, err := pool.Up(ctx, st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(ctx)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := p.Lease(lctx, pool.LeaseOptions{Holder: "test", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ldb, err := sql.Open("mysql", dsn.TCP(l.Port, l.User, l.Password, l.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer ldb.Close()
	w = 0
	if err := ldb.QueryRowContext(ctx, "SELECT w FROM t WHERE id = 1").Scan(&w); err != nil || w != 2 {
		t.Fatalf("a lease of the template's pool: w = %d, %v; want 2", w, err)
	}
}

// A build from SQL runs in RAM too; a failed build, or an aborted
// session, leaves nothing on tmpfs.
func TestBuildInRAMLeavesNothing(t *testing.T) {
	st, ram, log := ramBuilder(t)
	ctx := context.Background()
	dir := t.TempDir()
	m := templatetest.Build(t, st, "good", schema, template.BuildOptions{})
	if !strings.Contains(log(), "building in RAM under "+ram) {
		t.Errorf("build progress does not say it built in RAM:\n%s", log())
	}
	if fsType(t, st.Catalog().DataDir(m.Hash)) != unix.BTRFS_SUPER_MAGIC {
		t.Errorf("template not on the store's btrfs")
	}
	assertEmpty(t, ram, "after a good build")

	bad := writeFile(t, dir, "bad.sql", "CREATE TABLE a (id INT PRIMARY KEY);\nTHIS IS NOT SQL;\n")
	if _, _, err := st.Build(ctx, template.BuildOptions{Name: "bad", FromSQL: bad, Profile: mariadb.DefaultProfile()}); err == nil {
		t.Fatal("a build of bad SQL succeeded")
	}
	assertEmpty(t, ram, "after a failed SQL build")

	in := writeFile(t, dir, "ok.sql", schema)
	if _, _, err := st.Build(ctx, template.BuildOptions{Name: "badinit", FromSQL: in, InitCmd: "exit 3", Profile: mariadb.DefaultProfile()}); err == nil {
		t.Fatal("a build whose init command fails succeeded")
	}
	assertEmpty(t, ram, "after a failed init command")

	// Ctrl-C (the CLI cancels the context) while the init command runs
	// on the server in RAM.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := make(chan bool, 1)
	go func() {
		defer cancel()
		for range 300 {
			if len(st.RAMStages()) > 0 {
				time.Sleep(500 * time.Millisecond) // into the init command
				seen <- true
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		seen <- false
	}()
	if _, _, err := st.Build(cctx, template.BuildOptions{Name: "cancelled", FromSQL: in, InitCmd: "sleep 30", Profile: mariadb.DefaultProfile()}); err == nil {
		t.Fatal("a cancelled build succeeded")
	}
	if !<-seen {
		t.Error("the cancelled build never staged in RAM")
	}
	assertEmpty(t, ram, "after a build cancelled in RAM")

	ss, _, err := st.Begin(ctx, template.BuildOptions{Name: "aborted", Key: "k2", Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ss.Inst.Config.Datadir, ram+"/") {
		t.Errorf("session datadir %s not under %s", ss.Inst.Config.Datadir, ram)
	}
	ss.Abort()
	assertEmpty(t, ram, "after an aborted session")
	if l := st.RAMStages(); len(l) > 0 {
		t.Errorf("RAMStages = %v, want none", l)
	}
}

// A build bigger than the RAM budget runs on the store and says why.
func TestBuildOverRAMBudgetUsesStore(t *testing.T) {
	st, ram, log := ramBuilder(t)
	st.RAM.Budget = 1 << 20 // less than any base
	ctx := context.Background()
	ss, _, err := st.Begin(ctx, template.BuildOptions{Name: "big", Key: "k3", Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	if got := ss.Inst.Config.Datadir; strings.HasPrefix(got, ram) || fsType(t, got) != unix.BTRFS_SUPER_MAGIC {
		t.Errorf("over-budget build runs on %s, want the store's btrfs", got)
	}
	if !strings.Contains(log(), "building on the store, not in RAM") || !strings.Contains(log(), "RAM budget") {
		t.Errorf("no message about the fallback:\n%s", log())
	}
	m, err := ss.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.Catalog().DataDir(m.Hash)); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, ram, "after the build")
}

// A staging directory a killed build left is removed by the next build of
// the template; a look-alike of another user's in the same tmpfs stays.
func TestBuildInRAMRemovesOnlyItsLeftovers(t *testing.T) {
	st, ram, _ := ramBuilder(t)
	ctx := context.Background()
	opt := template.BuildOptions{Name: "left", Key: "k4", Profile: mariadb.DefaultProfile()}
	ss, _, err := st.Begin(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	stage := filepath.Dir(ss.Inst.Config.Datadir)
	prefix := strings.TrimRightFunc(filepath.Base(stage), func(r rune) bool { return r >= '0' && r <= '9' })
	// As if killed: the server dies, the stage stays.
	ss.Inst.Kill()
	keep := filepath.Join(stage, "data", "killed-marker")
	if err := os.WriteFile(keep, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(ram, prefix+"999")
	if err := os.Rename(stage, left); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(ram, prefix+"888")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ss.Abort() // the lock goes; its stage is gone already
	ss2, _, err := st.Begin(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer ss2.Abort()
	if _, err := os.Lstat(left); err == nil {
		t.Errorf("the staging directory a killed build left is still there: %s", left)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("another user's directory of the same name was removed: %v", err)
	}
	os.Remove(other)
}

// A logical capture from a live server is a load too: it runs in RAM and
// is published on the store.
func TestCaptureRunsInRAM(t *testing.T) {
	st, ram, log := ramBuilder(t)
	ctx := context.Background()
	m := templatetest.Build(t, st, "srcapp", schema, template.BuildOptions{})
	src, err := st.Start(ctx, m, "capsrc")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	db, err := src.Inst.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE USER cap@'%' IDENTIFIED BY 'cap-secret'", "GRANT ALL ON *.* TO cap@'%'"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	c, _, err := st.Build(ctx, template.BuildOptions{Name: "captured", Profile: mariadb.DefaultProfile(),
		Server: template.ServerSource{DSN: dsn.URL(src.Inst.Config.Port, "cap", "cap-secret", ""), Databases: []string{"srcapp"}, Method: "logical"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log(), "building in RAM under "+ram) {
		t.Errorf("the capture did not build in RAM:\n%s", log())
	}
	if fsType(t, st.Catalog().DataDir(c.Hash)) != unix.BTRFS_SUPER_MAGIC {
		t.Errorf("captured template not on the store's btrfs")
	}
	assertEmpty(t, ram, "after the capture")
	r, err := st.Start(ctx, c, "capclone")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cdb, err := r.Inst.Open("srcapp")
	if err != nil {
		t.Fatal(err)
	}
	defer cdb.Close()
	var n int
	if err := cdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM child").Scan(&n); err != nil || n != 2 {
		t.Fatalf("captured clone: %d rows in child, %v; want 2", n, err)
	}
}
