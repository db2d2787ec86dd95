package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/pristinedb/pristine/internal/oci"
	"github.com/pristinedb/pristine/internal/template"
)

// EnvAllowCache lists the cache repositories a daemon accepts in template
// requests, separated by commas or spaces, like Cache.Allow; a daemon that
// a client or `pool up` starts reads it from the environment it inherits.
const EnvAllowCache = "PRISTINE_ALLOW_CACHE"

// Cache is how the daemon uses fleet caches for the template requests that
// name one (api.TemplateRequest.Cache): it pulls a template another runner
// pushed, or takes the build lease in the registry, lets its client build
// and pushes the result when the client finishes, as `template build
// --cache` does in one process.
type Cache struct {
	// Allow lists the repositories requests may name (a repository or a
	// prefix of repositories: ghcr.io/acme allows ghcr.io/acme/templates).
	// An entry written http://HOST/REPO is reached over plain HTTP (a
	// registry on loopback). The daemon uses its own registry credentials
	// (docs/fleet.md), so it serves only what its operator allowed.
	Allow []string
	// CAFile is a PEM file of certificate authorities to trust besides
	// the system's.
	CAFile string
	// Wait is the longest wait for another runner's build before a
	// client of this daemon builds anyway (0: DefaultCacheWait).
	Wait time.Duration
	// Poll and Settle are the registry lease's timings (oci.CacheOptions;
	// 0 for its defaults); tests shorten them.
	Poll, Settle time.Duration
}

// AllowFromEnv adds the repositories of $PRISTINE_ALLOW_CACHE to c.Allow.
func (c *Cache) AllowFromEnv() {
	c.Allow = append(c.Allow, strings.FieldsFunc(os.Getenv(EnvAllowCache), func(r rune) bool { return r == ',' || r == ' ' })...)
}

// DefaultCacheWait is Cache.Wait's default.
const DefaultCacheWait = 20 * time.Minute

// caches is the daemon's state of fleet caches.
type caches struct {
	pulls singleflight.Group // by hash: one pull at a time into the store
	mu    sync.Mutex
	since map[string]time.Time // hash -> when a client first waited for another runner
}

var errForbidden = errors.New("forbidden")

// options returns the oci options for repo, or an error naming the setting
// that allows it.
func (c *Cache) options(repo string, log func(string, ...any)) (oci.CacheOptions, error) {
	ref, err := oci.ParseRef(repo)
	if err != nil {
		return oci.CacheOptions{}, fmt.Errorf("%w: cache: %v", errBadRequest, err)
	}
	want := ref.Repo()
	for _, a := range c.Allow {
		plain := strings.HasPrefix(a, "http://")
		a = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(a, "http://"), "https://"), "/")
		if want == a || strings.HasPrefix(want, a+"/") {
			wait := c.Wait
			if wait <= 0 {
				wait = DefaultCacheWait
			}
			return oci.CacheOptions{Repo: repo, Wait: wait, Poll: c.Poll, Settle: c.Settle,
				Remote: oci.Remote{PlainHTTP: plain, CAFile: c.CAFile, Log: log}}, nil
		}
	}
	return oci.CacheOptions{}, fmt.Errorf("%w: this daemon does not use the cache %s: start it with `pristine serve --allow-cache %s` (or %s=%s in its environment)",
		errForbidden, want, want, EnvAllowCache, want)
}

// cachedBegin is the fleet-cache part of POST /v1/templates. It answers
// the request itself (done) when the template came from the registry, when
// another runner is building it, or on an error; otherwise the caller
// begins a build session from plan (whose key the entry answers for) as
// usual, holding lock (nil when this daemon builds without the lease,
// after waiting too long) and pushing to entry when the session finishes.
func (s *Server) cachedBegin(w http.ResponseWriter, r *http.Request, req TemplateRequest, plan *template.Plan) (entry *oci.Entry, lock *oci.Lock, done bool) {
	logf := func(format string, args ...any) { s.log.Info(fmt.Sprintf(format, args...), "cache", req.Cache) }
	copt, err := s.Cache.options(req.Cache, logf)
	if err != nil {
		fail(w, err)
		return nil, nil, true
	}
	opt, hash := plan.Opt, plan.Hash
	if _, err := s.cat.Load(hash); err == nil || s.building(hash) {
		return nil, nil, false // here already, or being built here: as without a cache
	}
	if entry, err = copt.Entry(opt.Name, hash); err != nil {
		fail(w, fmt.Errorf("%w: %v", errBadRequest, err))
		return nil, nil, true
	}
	ctx := r.Context()
	pulled := func() bool {
		ok, err := entry.Exists(ctx)
		if err != nil || !ok {
			if err != nil {
				s.log.Warn("fleet cache lookup failed; building here", "cache", entry, "err", err)
			}
			return false
		}
		_, err, _ = s.caches.pulls.Do(hash, func() (any, error) { return entry.Pull(context.WithoutCancel(ctx), s.builder) })
		m, gerr := s.cat.Load(hash)
		if gerr != nil {
			s.log.Warn("fleet cache pull failed; building here", "cache", entry, "err", err)
			return false
		}
		s.claim(r, m)
		writeJSON(w, 200, ready(m))
		return true
	}
	if pulled() {
		return nil, nil, true
	}
	// Wait for another runner's push at most this long per request; the
	// client asks again until its own wait ends.
	poll := time.Now().Add(longPoll)
	for {
		lk, holder, err := entry.Lock(ctx)
		if err != nil {
			s.log.Warn("fleet cache lease failed; building here without it", "cache", entry, "err", err)
			return entry, nil, false
		}
		if lk != nil {
			if pulled() { // pushed between the look and the lease
				lk.Unlock(ctx)
				return nil, nil, true
			}
			s.caches.forget(hash)
			return entry, lk, false
		}
		if waited := s.caches.waited(hash); waited > copt.Wait {
			s.log.Warn("waited too long for another runner's build; building here", "cache", entry, "holder", holder, "waited", waited.Round(time.Second))
			s.caches.forget(hash)
			return entry, nil, false
		}
		if time.Now().After(poll) {
			writeJSON(w, http.StatusLocked, TemplateAnswer{Status: "building", Hash: hash,
				Error: fmt.Sprintf("%s is building it for the fleet cache %s", holder, entry)})
			return nil, nil, true
		}
		select {
		case <-ctx.Done():
			return nil, nil, true
		case <-time.After(cachePoll(copt)):
		}
		if pulled() {
			return nil, nil, true
		}
	}
}

// longPoll is how long one template request waits for another runner's
// push before answering "building".
var longPoll = 20 * time.Second

func cachePoll(c oci.CacheOptions) time.Duration {
	if c.Poll > 0 {
		return c.Poll
	}
	return 2 * time.Second
}

// building reports whether a build session of hash is open here.
func (s *Server) building(hash string) bool {
	s.builds.mu.Lock()
	defer s.builds.mu.Unlock()
	return s.builds.sessions[hash] != nil
}

// waited returns how long clients have waited for another runner's build
// of hash, counting from the first request that waited.
func (c *caches) waited(hash string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since == nil {
		c.since = map[string]time.Time{}
	}
	t, ok := c.since[hash]
	if !ok {
		c.since[hash] = time.Now()
		return 0
	}
	return time.Since(t)
}

func (c *caches) forget(hash string) {
	c.mu.Lock()
	delete(c.since, hash)
	c.mu.Unlock()
}
