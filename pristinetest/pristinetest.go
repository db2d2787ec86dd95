// Package pristinetest gives each Go test its own pristine MariaDB
// database from a pristine daemon:
//
//	func TestSignup(t *testing.T) {
//		t.Parallel()
//		db := pristinetest.New(t,
//			pristinetest.Template("app"),
//			pristinetest.Files("migrations"),
//			pristinetest.Migrate(func(ctx context.Context, db *sql.DB) error { return migrate.Up(ctx, db) }),
//		)
//		db.Exec("INSERT ...")
//	}
//
// The template is keyed by the content of Files, built once across test
// processes and runs (by the first test that needs it, with Migrate), and
// a pool of it is brought up when none is. Each call leases a database for
// the test, with this process as the lease's holder (the daemon reclaims it
// if the process is killed), and releases it through t.Cleanup. With
// KeepOnFailure a failed test's database is kept and its DSN logged.
package pristinetest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver the DSN is for

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
)

// DB is a test's leased database: an open *sql.DB and the lease it came
// from (host, port, socket, user, password, database, DSN, URL, Env).
type DB struct {
	*sql.DB
	Lease *api.Lease
}

// DSN is the database's go-sql-driver/mysql DSN.
func (d *DB) DSN() string { return d.Lease.DSN }

type config struct {
	client    *client.Client
	name      string
	files     []string
	extra     []string
	migrate   func(ctx context.Context, db *sql.DB) error
	build     client.BuildFunc
	database  string
	poolSize  int
	wait      time.Duration
	ttl       time.Duration
	keep      bool
	unchanged bool
	prefetch  bool
	forked    string // the hash of a fork (Fork): leased as it is, never built
	stale     bool
}

// Option configures New.
type Option func(*config)

// Client sets the daemon's client (default: client.FromEnv()).
func Client(c *client.Client) Option { return func(o *config) { o.client = c } }

// Template names the template (default "app").
func Template(name string) Option { return func(o *config) { o.name = name } }

// Files names the files that define the template (client.ContentKey
// patterns): migrations, fixtures, schema dumps. They are what keys it:
// a change to any of them builds a new template. With Migrate or Build
// and no Files, New fails (the daemon refuses the build): the template
// would be keyed by KeyExtra's strings alone and stay the same after a
// migration changes, unless AllowStale says so.
func Files(patterns ...string) Option {
	return func(o *config) { o.files = append(o.files, patterns...) }
}

// KeyExtra adds strings to the template's key.
func KeyExtra(s ...string) Option { return func(o *config) { o.extra = append(o.extra, s...) } }

// AllowStale accepts a Migrate or Build with no Files, keyed by KeyExtra
// alone: the template is rebuilt only when those strings change, so it
// goes stale, silently, when a file the migrations read changes.
func AllowStale() Option { return func(o *config) { o.stale = true } }

// Migrate builds the template: it runs against the template server's
// database when the template does not exist yet.
func Migrate(f func(ctx context.Context, db *sql.DB) error) Option {
	return func(o *config) { o.migrate = f }
}

// Build is Migrate with the template server's full connection (DSN, URL,
// Env for a migration tool run as a command).
func Build(f client.BuildFunc) Option { return func(o *config) { o.build = f } }

// Database names the template's database (default: pristine's).
func Database(name string) Option { return func(o *config) { o.database = name } }

// PoolSize is the size of the pool: brought up when none is, grown when a
// smaller one of the same template is up (default 4).
func PoolSize(n int) Option { return func(o *config) { o.poolSize = n } }

// Wait bounds how long New waits for a free database (default 60s).
func Wait(d time.Duration) Option { return func(o *config) { o.wait = d } }

// TTL is the lease's lifetime; the daemon reclaims it after (default 30m).
func TTL(d time.Duration) Option { return func(o *config) { o.ttl = d } }

// KeepOnFailure keeps a failed test's database for debugging and logs its
// DSN; release it with `pristine release ID`.
func KeepOnFailure() Option { return func(o *config) { o.keep = true } }

// ReleaseUnchanged releases with mode=unchanged: the daemon checks that
// nothing was written and hands the database out again without a reset
// (it resets it when something was). For tests that mostly read.
func ReleaseUnchanged() Option { return func(o *config) { o.unchanged = true } }

// Prefetch takes the next test's lease and its first connection while
// this test runs (client.PrefetchDB), one ahead per template in the
// process, so the next New finds its database leased and connected, and
// releases each test's lease in the background when the test ends (a
// failed release is printed on stderr; the daemon reclaims a lease whose
// release never came when this process exits). The lease taken ahead holds a
// slot (a pool of 4 serves 3 parallel tests and 1 ahead) and is held by
// this process: the daemon reclaims it when the process exits. Not with a
// daemon on another machine (PRISTINE_URL), whose leases must be renewed
// while held: there New leases as usual.
func Prefetch() Option { return func(o *config) { o.prefetch = true } }

// ready remembers, per process, the templates whose pools are known up;
// a failed preparation is tried again by the next test.
var ready sync.Map // name+key -> *readyEntry

type readyEntry struct {
	mu   sync.Mutex
	hash string
	// ahead takes leases ahead (Prefetch); made by the first New that
	// asks for it.
	ahead *client.Prefetcher
}

// New leases a pristine database for t, building the template and
// bringing its pool up first when needed, and releases it when t ends.
// Every failure stops the test with a message saying the cause and fix.
func New(t testing.TB, opts ...Option) *DB {
	t.Helper()
	o := config{name: "app", poolSize: 4, wait: time.Minute}
	for _, f := range opts {
		f(&o)
	}
	if o.client == nil {
		c, err := client.FromEnv()
		if err != nil {
			t.Fatalf("pristinetest: %v", err)
		}
		o.client = c
	}
	ctx := context.Background()
	key, err := o.key()
	if err != nil {
		t.Fatalf("pristinetest: %v", err)
	}
	v, _ := ready.LoadOrStore(o.name+"\x00"+key, &readyEntry{})
	r := v.(*readyEntry)
	r.mu.Lock()
	if r.hash == "" {
		r.hash, err = o.prepare(ctx, key)
	}
	r.mu.Unlock()
	if err != nil {
		t.Fatalf("pristinetest: %v", err)
	}
	ttl := o.ttl
	if ttl == 0 && o.client.Remote() {
		// A daemon on another machine cannot watch this process: a short
		// TTL, renewed while the test runs, reclaims the lease within a
		// minute of a killed run.
		ttl = RemoteTTL
	}
	req := api.LeaseRequest{Template: o.name, Holder: t.Name(), TTL: ttl.Seconds(), Wait: o.wait.Seconds(), PID: os.Getpid()}
	var l *api.Lease
	var db *sql.DB
	var ahead *client.Prefetcher
	if o.prefetch && !o.client.Remote() {
		ahead = r.prefetcher(o.client, req)
		l, db, err = ahead.LeaseDB(ctx)
	} else {
		l, err = o.client.LeaseWait(ctx, req)
	}
	if err != nil {
		t.Fatalf("pristinetest: lease a database of %s: %v", o.name, err)
	}
	stopBeat := func() {}
	if o.client.Remote() {
		bctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			o.client.Heartbeat(bctx, l.ID, ttl, func(err error) { t.Logf("pristinetest: renew lease %s: %v", l.ID, err) })
		}()
		stopBeat = func() { cancel(); <-done }
	}
	if db == nil {
		if db, err = sql.Open("mysql", l.DSN); err != nil {
			t.Fatalf("pristinetest: open %s: %v", l.Database, err)
		}
	}
	t.Cleanup(func() {
		stopBeat()
		db.Close()
		cctx := context.Background()
		if o.keep && t.Failed() {
			if _, err := o.client.Keep(cctx, l.ID); err != nil {
				t.Logf("pristinetest: keep lease %s: %v", l.ID, err)
				return
			}
			t.Logf("pristinetest: kept the database of this failed test for debugging:\n  mariadb -h%s -P%d -u%s -p%s %s\n  DSN %s\n  release it with: pristine release %s",
				l.Host, l.Port, l.User, l.Password.Value(), l.Database, l.DSN, l.ID)
			return
		}
		if ahead != nil {
			ahead.Release(l.ID, o.unchanged)
			return
		}
		if _, err := o.client.Release(cctx, l.ID, o.unchanged); err != nil {
			t.Errorf("pristinetest: release lease %s: %v", l.ID, err)
		}
	})
	return &DB{DB: db, Lease: l}
}

// prefetcher is the template's Prefetcher, made at the first call.
func (r *readyEntry) prefetcher(c *client.Client, req api.LeaseRequest) *client.Prefetcher {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ahead == nil {
		req.Holder = "pristinetest: taken ahead"
		r.ahead = c.PrefetchDB(req)
		r.ahead.ReleaseFailed = func(err error) {
			fmt.Fprintf(os.Stderr, "pristinetest: %v (the daemon reclaims the lease when this process exits)\n", err)
		}
	}
	return r.ahead
}

// RemoteTTL is a lease's time to live when the daemon is on another
// machine (PRISTINE_URL): the lease is renewed every third of it while
// the test runs.
const RemoteTTL = time.Minute

func (o *config) key() (string, error) {
	if o.forked != "" {
		return o.forked, nil
	}
	if len(o.files) == 0 && len(o.extra) == 0 {
		return "", fmt.Errorf("no template files: pass pristinetest.Files(\"migrations\") naming the files that define template %s (or KeyExtra with AllowStale, for a template that goes stale when the migrations change)", o.name)
	}
	return client.ContentKey(o.files, o.extra...)
}

// prepare builds the template if needed and brings its pool up.
func (o *config) prepare(ctx context.Context, key string) (string, error) {
	if o.forked != "" {
		return o.forked, o.client.EnsurePool(ctx, o.name, o.forked, o.poolSize)
	}
	build := o.build
	if build == nil && o.migrate != nil {
		build = func(ctx context.Context, conn *api.TemplateAnswer) error {
			db, err := sql.Open("mysql", withParam(conn.DSN, "multiStatements=true"))
			if err != nil {
				return err
			}
			defer db.Close()
			return o.migrate(ctx, db)
		}
	}
	a, err := o.client.EnsureTemplate(ctx, api.TemplateRequest{Name: o.name, Key: key, Database: o.database,
		RunsCode: build != nil, KeyFiles: len(o.files), AllowStale: o.stale}, build, 0)
	if client.IsUnkeyed(err) {
		return "", fmt.Errorf("template %s is built by pristinetest.Migrate (or Build) but no pristinetest.Files keys it: it would be keyed by KeyExtra alone, so after a migration changes every run would still get the old template. Pass pristinetest.Files(\"migrations\") naming the files the migrations read, or pristinetest.AllowStale() to accept a template that goes stale when they change", o.name)
	}
	if err != nil {
		return "", err
	}
	if err := o.client.EnsurePool(ctx, o.name, a.Hash, o.poolSize); err != nil {
		return "", err
	}
	return a.Hash, nil
}

func withParam(dsn, p string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + p
	}
	return dsn + "?" + p
}
