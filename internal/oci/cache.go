package oci

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/template"
	"oras.land/oras-go/v2/registry/remote"
)

// CacheOptions configure `template build --cache`.
type CacheOptions struct {
	Remote
	// Repo is the repository shared by the fleet, without a tag.
	Repo string
	// Wait is the longest wait for another runner's build before building
	// here anyway (default 20 minutes).
	Wait time.Duration
	// TTL is the lease time; the holder renews it every TTL/3 (default 60 s).
	TTL time.Duration
	// Settle is the pause between writing the lease and reading it back
	// (default 2 s); see lease.
	Settle time.Duration
	// Poll is the pause between two looks at the registry while waiting
	// (default 2 s).
	Poll time.Duration
}

// Outcome says where a cached build's template came from.
type Outcome string

// The outcomes of CachedBuild.
const (
	FromStore    Outcome = "local"  // the store had it
	FromRegistry Outcome = "pulled" // another runner built it
	BuiltHere    Outcome = "built"  // built here (and pushed, unless the push failed)
)

func (c *CacheOptions) defaults() {
	if c.Wait <= 0 {
		c.Wait = 20 * time.Minute
	}
	if c.TTL <= 0 {
		c.TTL = time.Minute
	}
	if c.Settle <= 0 {
		c.Settle = 2 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 2 * time.Second
	}
}

// ErrCacheStdin is CachedBuild's answer for SQL from standard input; check
// for it before reading stdin (template.Builder.Plan spools it).
var ErrCacheStdin = errors.New("template build --cache: SQL from stdin cannot be looked up before it is read: write it to a file and pass --from-sql FILE")

// CachedBuild returns the template p describes: from the store, else
// from the repository c.Repo (tag ContentTag), else built here and pushed.
// p carries the content key, computed once by template.Builder.Plan; a
// capture that is re-keyed while it builds (its source moved on) is pushed
// under the tag of the key it is filed under.
// Runners that miss the cache together build once: one takes the lease in
// the registry, the others wait for its push (or build themselves after
// c.Wait, or when its lease goes stale). A failed push is reported through
// c.Log and does not fail the build.
func CachedBuild(ctx context.Context, p *template.Plan, c CacheOptions) (*catalog.Meta, Outcome, error) {
	if p.FromStdin() {
		return nil, "", ErrCacheStdin
	}
	st, opt, hash := p.Builder(), p.Opt, p.Hash
	if m := localByHash(st, hash); m != nil && !opt.Rebuild {
		return m, FromStore, nil
	}
	e, err := c.Entry(opt.Name, hash)
	if err != nil {
		return nil, "", err
	}
	pull := func() (*catalog.Meta, Outcome, error) {
		m, err := e.Pull(ctx, st)
		if err == nil || ctx.Err() != nil {
			return m, FromRegistry, err
		}
		// A cache entry that cannot be pulled (damaged, or the registry went
		// away) must not fail the build: build here, and push a good copy.
		e.c.logf("warning: template %s: the cached copy could not be pulled (%v); building here", opt.Name, err)
		m, err = e.buildAndPush(ctx, p)
		return m, BuiltHere, err
	}
	if !opt.Rebuild {
		if ok, err := e.Exists(ctx); err != nil || ok {
			if err != nil {
				return nil, "", err
			}
			return pull()
		}
	}
	deadline := time.Now().Add(e.c.Wait)
	waiting := ""
	for {
		lk, holder, err := e.Lock(ctx)
		if err != nil {
			return nil, "", err
		}
		if lk != nil {
			if ok, err := e.Exists(ctx); err == nil && ok && !opt.Rebuild {
				lk.Unlock(ctx)
				return pull()
			}
			m, err := e.buildAndPush(ctx, p)
			lk.Unlock(ctx)
			return m, BuiltHere, err
		}
		if holder != waiting {
			waiting = holder
			e.c.logf("template %s: %s is building it; waiting for its push (at most until %s)", opt.Name, holder, deadline.Format(time.TimeOnly))
		}
		if err := sleep(ctx, e.c.Poll); err != nil {
			return nil, "", err
		}
		if ok, err := e.Exists(ctx); err != nil {
			return nil, "", err
		} else if ok && !opt.Rebuild {
			return pull()
		}
		if time.Now().After(deadline) {
			e.c.logf("template %s: waited %s for %s; building here", opt.Name, e.c.Wait, waiting)
			m, err := e.buildAndPush(ctx, p)
			return m, BuiltHere, err
		}
	}
}

// buildAndPush builds the template and pushes it; a failed push is a
// warning (a runner without write access still gets its template).
func (e *Entry) buildAndPush(ctx context.Context, p *template.Plan) (*catalog.Meta, error) {
	m, _, err := p.Build(ctx)
	if err != nil {
		return nil, err
	}
	to := e
	if m.Hash != e.hash {
		// Re-keyed: the entry of the key it is filed under.
		if to, err = e.c.Entry(m.Name, m.Hash); err != nil {
			e.c.logf("warning: template %s built but not cached: %v", m.Name, err)
			return m, nil
		}
	}
	_ = to.Push(ctx, p.Builder(), m)
	return m, nil
}

// Entry is one template's place in a fleet's cache repository: the content
// tag it is pushed under and the build lease beside it. CachedBuild takes
// all the steps in one call; the daemon, whose clients build through its API
// in several requests, takes them one by one.
type Entry struct {
	c    CacheOptions
	name string
	hash string // the content key the entry answers for
	ref  Ref    // the repository, tagged with the content tag
	repo *remote.Repository
	// lease is made by the first Lock and kept: its holder name and what it
	// has seen of other holders' renewals (to tell a stale lease) carry
	// over from one try to the next.
	lease *lease
}

// Entry returns the cache entry of the template name with content hash
// hash in c.Repo, a repository named without a tag.
func (c CacheOptions) Entry(name, hash string) (*Entry, error) {
	c.defaults()
	ref, err := ParseRef(c.Repo)
	if err != nil {
		return nil, err
	}
	if ref.Reference.Reference != "" {
		return nil, fmt.Errorf("cache %s: name a repository without a tag: the tag is derived from the template's content hash", c.Repo)
	}
	repo, err := c.repository(ref)
	if err != nil {
		return nil, err
	}
	return &Entry{c: c, name: name, hash: hash, ref: ref.WithTag(ContentTag(name, hash)), repo: repo}, nil
}

// String is the entry's reference, repository:tag.
func (e *Entry) String() string { return e.ref.String() }

// Exists reports whether the template has been pushed.
func (e *Entry) Exists(ctx context.Context) (bool, error) {
	_, err := e.repo.Resolve(ctx, e.ref.Reference.Reference)
	if notFound(err) {
		return false, nil
	}
	return err == nil, explain("look up the cache in", e.ref, err)
}

// Pull pulls the pushed template into st, filed under the entry's content
// key: naming a cache repository trusts whoever may push to it to answer
// for the keys of the templates built with it (docs/security.md).
func (e *Entry) Pull(ctx context.Context, st *template.Builder) (*catalog.Meta, error) {
	e.c.logf("template %s: pulling %s", e.name, e.ref)
	m, _, err := Pull(ctx, st, e.ref.String(), PullOptions{Remote: e.c.Remote, Key: e.hash})
	return m, err
}

// Push pushes m under the entry's tag. A failure is logged and returned;
// callers go on with the template they built.
func (e *Entry) Push(ctx context.Context, st *template.Builder, m *catalog.Meta) error {
	tag := e.ref.Reference.Reference
	stats, err := Push(ctx, st, m, e.ref.String(), PushOptions{Remote: e.c.Remote, Tags: []string{tag}})
	if err != nil {
		e.c.logf("warning: template %s built but not cached: %v", m.Name, err)
		return err
	}
	e.c.logf("template %s pushed to %s (%d MB in %.1fs)", m.Name, e.ref, stats.ArchiveBytes>>20, stats.Elapsed.Seconds())
	return nil
}

// Lock tries once to take the entry's build lease. It returns the held
// lock, renewed in the background until Unlock, or nil and the holder's
// name when another runner holds it. Calls on one Entry must not overlap.
func (e *Entry) Lock(ctx context.Context) (*Lock, string, error) {
	if e.lease == nil {
		lk, err := newLease(ctx, e.repo, lockTag(e.ref.Reference.Reference), e.c.TTL, e.c.Settle)
		if err != nil {
			return nil, "", explain("take the build lease in", e.ref, err)
		}
		e.lease = lk
	}
	lk := e.lease
	got, cur, err := lk.acquire(ctx)
	if err != nil {
		return nil, "", explain("take the build lease in", e.ref, err)
	}
	if !got {
		holder := "another runner"
		if cur != nil && cur.Holder != "" {
			holder = cur.Holder
		}
		return nil, holder, nil
	}
	return &Lock{e: e, l: lk, stop: lk.keep(context.WithoutCancel(ctx))}, "", nil
}

// Lock is a held build lease of an Entry.
type Lock struct {
	e    *Entry
	l    *lease
	stop func()
	once sync.Once
}

// Unlock stops renewing the lease and releases it; a failed release is
// logged (the lease then goes stale after its TTL). It may be called more
// than once.
func (l *Lock) Unlock(ctx context.Context) {
	l.once.Do(func() {
		l.stop()
		if err := l.l.release(ctx); err != nil {
			l.e.c.logf("warning: release the build lease %s: %v (it goes stale in %s)", lockTag(l.e.ref.Reference.Reference), err, l.e.c.TTL)
		}
	})
}
