package oci

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/template"
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

// CachedBuild returns the template opt describes: from the store, else
// from the repository c.Repo (tag ContentTag), else built here and pushed.
// Runners that miss the cache together build once: one takes the lease in
// the registry, the others wait for its push (or build themselves after
// c.Wait, or when its lease goes stale). A failed push is reported through
// c.Log and does not fail the build.
func CachedBuild(ctx context.Context, st *template.Builder, opt template.BuildOptions, c CacheOptions) (*catalog.Meta, Outcome, error) {
	c.defaults()
	if err := catalog.ValidName(opt.Name); err != nil {
		return nil, "", err
	}
	if opt.FromSQL == "-" {
		return nil, "", errors.New("template build --cache: SQL from stdin cannot be looked up before it is read: write it to a file and pass --from-sql FILE")
	}
	ref, err := ParseRef(c.Repo)
	if err != nil {
		return nil, "", err
	}
	if ref.Reference.Reference != "" {
		return nil, "", fmt.Errorf("--cache %s: name a repository without a tag: the tag is derived from the template's content hash", c.Repo)
	}
	hash, err := st.Hash(opt)
	if err != nil {
		return nil, "", err
	}
	if m := localByHash(st, hash); m != nil && !opt.Rebuild {
		return m, FromStore, nil
	}
	tag := ContentTag(opt.Name, hash)
	repo, err := c.repository(ref)
	if err != nil {
		return nil, "", err
	}
	exists := func() (bool, error) {
		_, err := repo.Resolve(ctx, tag)
		if notFound(err) {
			return false, nil
		}
		return err == nil, explain("look up the cache in", ref, err)
	}
	pull := func() (*catalog.Meta, Outcome, error) {
		c.logf("template %s: pulling %s:%s", opt.Name, ref.Repo(), tag)
		m, _, err := Pull(ctx, st, ref.WithTag(tag).String(), PullOptions{Remote: c.Remote})
		if err == nil || ctx.Err() != nil {
			return m, FromRegistry, err
		}
		// A cache entry that cannot be pulled (damaged, or the registry went
		// away) must not fail the build: build here, and push a good copy.
		c.logf("warning: template %s: the cached copy could not be pulled (%v); building here", opt.Name, err)
		m, err = c.buildAndPush(ctx, st, opt, ref, tag)
		return m, BuiltHere, err
	}
	if !opt.Rebuild {
		if ok, err := exists(); err != nil || ok {
			if err != nil {
				return nil, "", err
			}
			return pull()
		}
	}
	lk, err := newLease(ctx, repo, lockTag(tag), c.TTL, c.Settle)
	if err != nil {
		return nil, "", explain("take the build lease in", ref, err)
	}
	deadline := time.Now().Add(c.Wait)
	waiting := ""
	for {
		got, cur, err := lk.acquire(ctx)
		if err != nil {
			return nil, "", explain("take the build lease in", ref, err)
		}
		if got {
			if ok, err := exists(); err == nil && ok && !opt.Rebuild {
				_ = lk.release(ctx)
				return pull()
			}
			stop := lk.keep(ctx)
			m, err := c.buildAndPush(ctx, st, opt, ref, tag)
			stop()
			if rerr := lk.release(ctx); rerr != nil {
				c.logf("warning: release the build lease %s:%s: %v (it goes stale in %s)", ref.Repo(), lockTag(tag), rerr, c.TTL)
			}
			return m, BuiltHere, err
		}
		if cur != nil && cur.Holder != waiting {
			waiting = cur.Holder
			c.logf("template %s: %s is building it; waiting for its push (at most until %s)", opt.Name, cur.Holder, deadline.Format(time.TimeOnly))
		}
		if err := sleep(ctx, c.Poll); err != nil {
			return nil, "", err
		}
		if ok, err := exists(); err != nil {
			return nil, "", err
		} else if ok && !opt.Rebuild {
			return pull()
		}
		if time.Now().After(deadline) {
			c.logf("template %s: waited %s for %s; building here", opt.Name, c.Wait, waiting)
			m, err := c.buildAndPush(ctx, st, opt, ref, tag)
			return m, BuiltHere, err
		}
	}
}

// buildAndPush builds the template and pushes it under tag; a failed push
// is a warning (a runner without write access still gets its template).
func (c *CacheOptions) buildAndPush(ctx context.Context, st *template.Builder, opt template.BuildOptions, ref Ref, tag string) (*catalog.Meta, error) {
	m, _, err := st.Build(ctx, opt)
	if err != nil {
		return nil, err
	}
	stats, err := Push(ctx, st, m, ref.WithTag(tag).String(), PushOptions{Remote: c.Remote, Tags: []string{tag}})
	if err != nil {
		c.logf("warning: template %s built but not cached: %v", m.Name, err)
		return m, nil
	}
	c.logf("template %s pushed to %s:%s (%d MB in %.1fs)", m.Name, ref.Repo(), tag, stats.ArchiveBytes>>20, stats.Elapsed.Seconds())
	return m, nil
}
