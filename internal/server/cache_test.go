package server_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/oci"
	"github.com/pristinedb/pristine/internal/oci/localregistry"
	"github.com/pristinedb/pristine/internal/server"
)

// TestFleetCacheThroughTheAPI: clients of two daemons (two machines of a
// fleet) that ask for the same keyed template with the same cache build it
// once between them; the other daemon pulls what the first pushed, and a
// third daemon that comes later pulls it without its build function ever
// running. A daemon that was not told to allow the repository refuses it,
// naming the flag.
func TestFleetCacheThroughTheAPI(t *testing.T) {
	reg := startRegistry(t)
	repo := reg.Addr + "/fleet/templates"
	// One build between them is what the registry lease promises while
	// every request to the registry takes less than Settle (oci/lock.go):
	// the default, 2 s, not the 300 ms of the tests that need no single
	// winner (under -race on a loaded two-core machine a request took
	// longer than 300 ms, and both daemons built).
	allow := func(s *server.Server) {
		s.Cache = server.Cache{Allow: []string{"http://" + reg.Addr + "/fleet"}, Poll: 100 * time.Millisecond, Settle: 2 * time.Second}
	}
	a, b := newDaemon(t, allow), newDaemon(t, allow)
	req := api.TemplateRequest{Name: "fleetapi", Key: "migrations-v1", Database: "shop", Cache: repo}
	var builds atomic.Int32
	build := func(ctx context.Context, conn *api.TemplateAnswer) error {
		builds.Add(1)
		return execSQL(conn.DSN, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2), (3)")
	}
	var wg sync.WaitGroup
	answers := make([]*api.TemplateAnswer, 2)
	errs := make([]error, 2)
	for i, d := range []*daemon{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = d.c.EnsureTemplate(context.Background(), req, build, 5*time.Minute)
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("daemon %d: %v", i, errs[i])
		}
	}
	if n := builds.Load(); n != 1 {
		t.Fatalf("the build function ran %d times across two daemons sharing a cache, want 1", n)
	}
	if answers[0].Hash != answers[1].Hash {
		t.Fatalf("the daemons hold different templates: %s and %s", answers[0].Hash, answers[1].Hash)
	}
	for i, d := range []*daemon{a, b} {
		if _, err := d.cat.Get(answers[0].Hash); err != nil {
			t.Fatalf("daemon %d has no template %s: %v", i, answers[0].Hash[:12], err)
		}
	}

	// A machine that comes later pulls it; its build function must not run.
	c := newDaemon(t, allow)
	got, err := c.c.EnsureTemplate(context.Background(), req, func(context.Context, *api.TemplateAnswer) error {
		t.Error("the third daemon built a template its fleet's cache holds")
		return errors.New("should have been pulled")
	}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != answers[0].Hash {
		t.Fatalf("pulled %s, want %s", got.Hash, answers[0].Hash)
	}
	c.poolUp("fleetapi", 1)
	l, err := c.c.Lease(context.Background(), api.LeaseRequest{Template: "fleetapi"})
	if err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, l.DSN, "SELECT COUNT(*) FROM t"); n != 3 {
		t.Fatalf("a lease of the pulled template has %d rows, want 3", n)
	}

	// A daemon whose operator did not allow the repository refuses it.
	d := newDaemon(t)
	_, err = d.c.EnsureTemplate(context.Background(), req, build, time.Minute)
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 403 || !strings.Contains(err.Error(), "--allow-cache "+repo) {
		t.Fatalf("a cache the daemon does not allow: %v, want 403 naming --allow-cache %s", err, repo)
	}
}

// execSQL runs statements on a DSN.
func execSQL(dsn string, stmts ...string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// countRows runs a COUNT query on a DSN.
func countRows(t *testing.T, dsn, q string) int {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFleetCacheStopsWaiting: while another machine holds the fleet's
// build lease and never pushes (its client began a build and went quiet),
// a daemon's client waits no longer than the daemon's Cache.Wait, then
// builds the template itself; the holder's lease is released when its
// build is aborted.
func TestFleetCacheStopsWaiting(t *testing.T) {
	reg := startRegistry(t)
	cache := func(wait time.Duration) func(*server.Server) {
		return func(s *server.Server) {
			s.Cache = server.Cache{Allow: []string{"http://" + reg.Addr}, Wait: wait, Poll: 100 * time.Millisecond, Settle: 300 * time.Millisecond}
		}
	}
	holder, waiter := newDaemon(t, cache(time.Hour)), newDaemon(t, cache(2*time.Second))
	req := api.TemplateRequest{Name: "stuck", Key: "stuck-v1", Cache: reg.Addr + "/fleet/stuck"}
	ctx := context.Background()
	a, err := holder.c.BeginTemplate(ctx, req)
	if err != nil || a.Status != api.StatusBuild {
		t.Fatalf("the first machine's begin: %+v, %v; want build", a, err)
	}
	built := false
	start := time.Now()
	got, err := waiter.c.EnsureTemplate(ctx, req, func(ctx context.Context, conn *api.TemplateAnswer) error {
		built = true
		return execSQL(conn.DSN, "CREATE TABLE t (id INT)")
	}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !built || got.Status != api.StatusReady {
		t.Fatalf("the waiting machine got %+v without building (built %v): want it to build once the wait ran out", got, built)
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Fatalf("the waiting machine built after %s, before the daemon's 2 s wait for the lease holder", waited)
	}
	// The holder's lease is held until its build ends, and released then.
	entry, err := oci.CacheOptions{Repo: req.Cache, Remote: oci.Remote{PlainHTTP: true}, Settle: 300 * time.Millisecond}.Entry(req.Name, a.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if lk, who, err := entry.Lock(ctx); err != nil || lk != nil {
		t.Fatalf("the lease of an open build: lock %v, %v: want it held by the first machine", lk, err)
	} else if who == "" {
		t.Fatal("the held lease names no holder")
	}
	if err := holder.c.AbortTemplate(ctx, a.Hash); err != nil {
		t.Fatal(err)
	}
	lk, who, err := entry.Lock(ctx)
	if err != nil || lk == nil {
		t.Fatalf("the lease after the build was aborted: held by %q, %v: want it released", who, err)
	}
	lk.Unlock(ctx)
}

// startRegistry runs Debian's docker-registry on loopback for one test.
func startRegistry(t *testing.T) *localregistry.Registry {
	t.Helper()
	reg, err := localregistry.Start(localregistry.Config{Dir: t.TempDir()})
	if errors.Is(err, localregistry.ErrMissing) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Kill() })
	return reg
}
