package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/pristinedb/pristine/api"
)

// BuildFunc runs a template's migrations and fixtures against the template
// server conn describes (DSN, URL, Env, Host, Port, Socket, User, Password,
// Database). An error aborts the build.
type BuildFunc func(ctx context.Context, conn *api.TemplateAnswer) error

// EnvCache names the fleet cache EnsureTemplate uses when the request
// names none (docs/fleet.md).
const EnvCache = "PRISTINE_CACHE"

// EnsureTemplate returns the template req describes, building it with
// build when nobody has: across processes and runs exactly one caller
// builds a key, the others wait up to wait for it. The answer's Hash names
// the template. With req.Cache (default $PRISTINE_CACHE), an OCI
// repository a fleet shares, the daemon pulls the template from it when
// another machine built it and pushes it there when build ran here.
// A caller whose build runs code says so (req.RunsCode) with how many
// file paths its key covers (req.KeyFiles): the daemon refuses code that
// no file keys, whose template would stay the same after a migration
// changes (IsUnkeyed), unless req.AllowStale accepts that risk.
func (c *Client) EnsureTemplate(ctx context.Context, req api.TemplateRequest, build BuildFunc, wait time.Duration) (*api.TemplateAnswer, error) {
	if wait <= 0 {
		wait = 30 * time.Minute
	}
	if req.Cache == "" {
		req.Cache = os.Getenv(EnvCache)
	}
	deadline := time.Now().Add(wait)
	for {
		a, err := c.BeginTemplate(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", req.Name, err)
		}
		switch a.Status {
		case StatusReady:
			return a, nil
		case StatusBuild:
			return c.build(ctx, req, a, build)
		}
		// Someone else builds it: wait, then begin again (it is ready, or
		// its builder failed and this caller tries).
		for a.Status == StatusBuilding {
			left := time.Until(deadline)
			if left <= 0 {
				return nil, fmt.Errorf("template %s: another process has been building it for longer than %s: see its output, or `pristine template ls`", req.Name, wait)
			}
			a, err = c.WaitTemplate(ctx, req.Key, min(left, 30*time.Second))
			var ae *APIError
			if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
				break // the builder aborted: begin again
			}
			if err != nil {
				return nil, fmt.Errorf("template %s: wait for its build: %w", req.Name, err)
			}
			if a.Status == StatusReady {
				return a, nil
			}
			if a.Status == StatusFailed {
				break
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// IsUnkeyed reports whether err is the daemon's refusal of a template
// whose build runs code but that no file keys (api.CodeUnkeyedBuild,
// api.TemplateRequest.Unkeyed): an integration answers it with its own
// option names.
func IsUnkeyed(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == api.CodeUnkeyedBuild
}

// build runs build against the session a opened and finishes it, or
// aborts it when build fails.
func (c *Client) build(ctx context.Context, req api.TemplateRequest, a *api.TemplateAnswer, build BuildFunc) (*api.TemplateAnswer, error) {
	if build == nil {
		_ = c.AbortTemplate(context.WithoutCancel(ctx), a.Hash)
		return nil, fmt.Errorf("template %s: it does not exist and nothing was given to build it", req.Name)
	}
	if err := build(ctx, a); err != nil {
		_ = c.AbortTemplate(context.WithoutCancel(ctx), a.Hash)
		return nil, fmt.Errorf("template %s: build failed, so it was aborted: %w", req.Name, err)
	}
	done, err := c.FinishTemplate(ctx, a.Hash)
	if err != nil {
		return nil, fmt.Errorf("template %s: finish build: %w", req.Name, err)
	}
	return done, nil
}

// EnsurePool makes sure a pool of the template hash is up with at least
// size slots: it brings one of size slots up when none is, returning as
// soon as its first slot answers (the others start in the daemon, and
// each serves waiting leases as it answers), and grows a smaller one to
// size (at once: the new slots start in the background, leases wait for
// them; Notify is told). Growth the daemon's budget cannot hold fails at
// once with the daemon's message, which names the limit. A pool of the
// same name built from other files is replaced when nobody holds a lease
// on it, and refused otherwise. A pool a peer is bringing up right now
// counts as up: the lease that follows (LeaseWait) waits for its first
// slot.
func (c *Client) EnsurePool(ctx context.Context, name, hash string, size int) error {
	st, err := c.Pool(ctx, name)
	var ae *APIError
	switch {
	case err == nil && st.Hash == hash && st.Size >= size:
		return nil
	case err == nil && st.Hash == hash:
		return c.growPool(ctx, name, hash, st.Size, size)
	case err == nil && st.Leased > 0:
		return fmt.Errorf("pool %s: a pool of an older build of this template is up with %d leases: let its tests end, or run `pristine pool down --template %s`", name, st.Leased, name)
	case err == nil:
		if _, err := c.PoolDown(ctx, name); err != nil {
			return fmt.Errorf("pool %s: replace the pool of an older build: %w", name, err)
		}
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
	case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable:
		return nil // a peer's pool up is making the pool: the lease waits for it (LeaseWait)
	case errors.Is(err, ErrNoDaemon):
		return err
	default:
		return fmt.Errorf("pool %s: %w", name, err)
	}
	if size < 1 {
		size = 1
	}
	// The first slot is enough: the lease that follows takes it, and the
	// others come up while the run's first tests go.
	_, err = c.PoolUp(ctx, api.PoolRequest{Template: hash, Size: size, MinReady: 1}, nil)
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return nil // a peer brought it up first
	}
	if err != nil {
		return fmt.Errorf("pool %s: %w", name, err)
	}
	return nil
}

// growPool grows the pool of name from its size to size.
func (c *Client) growPool(ctx context.Context, name, hash string, from, size int) error {
	st, err := c.PoolUp(ctx, api.PoolRequest{Template: hash, Size: size}, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return nil // a peer grew it first
	}
	if err != nil {
		return fmt.Errorf("pool %s: grow it from %d to %d slots: %w", name, from, size, err)
	}
	c.notify(fmt.Sprintf("pool %s had %d slots, this run needs %d: grew it to %d (the extra slots go again after the daemon's --shrink-after idle)", name, from, size, st.Size))
	return nil
}

// LeaseWait acquires a lease like Lease, waiting (up to req.Wait seconds,
// default 60) for a free slot; the daemon waits within it for a pool that
// is coming up and serves the lease from its first slot that answers (an
// older daemon answered 503 while a pool came up: that is retried). The
// lease names this process as its holder process unless req.PID is set,
// so the daemon reclaims it if the process dies. A 429 (too many lease
// requests in progress) is retried after the daemon's Retry-After, within
// the same wait.
func (c *Client) LeaseWait(ctx context.Context, req api.LeaseRequest) (*api.Lease, error) {
	if req.PID == 0 {
		req.PID = os.Getpid()
	}
	wait := 60 * time.Second
	if req.Wait > 0 {
		wait = time.Duration(req.Wait * float64(time.Second))
	}
	deadline := time.Now().Add(wait)
	for {
		r := req
		// The daemon waits at most api.MaxWait per request; longer waits loop.
		r.Wait = min(max(time.Until(deadline).Seconds(), 0.001), api.MaxWait.Seconds())
		l, err := c.Lease(ctx, r)
		var ae *APIError
		if err == nil || !errors.As(err, &ae) || time.Now().After(deadline) {
			return l, err
		}
		pause := 100 * time.Millisecond
		switch ae.Status {
		case http.StatusServiceUnavailable:
		case http.StatusTooManyRequests:
			pause = max(ae.RetryAfter, pause)
			if time.Until(deadline) < pause {
				return nil, err
			}
		default:
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
}
