package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/errtag"
	"github.com/pristinedb/pristine/internal/oci"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
)

// TemplateRequest and TemplateAnswer are the template API's wire types.
type (
	TemplateRequest = api.TemplateRequest
	TemplateAnswer  = api.TemplateAnswer
)

// builds tracks the build sessions clients drive through the API.
type builds struct {
	mu       sync.Mutex
	sessions map[string]*buildSession // by hash
	failed   map[string]failedBuild   // by hash, for waiters
	changed  chan struct{}            // closed and replaced on every change
}

// failedBuild is why a build session failed, and whose it was.
type failedBuild struct {
	why   string
	group string // the group whose token began it; "" for the operator
}

type buildSession struct {
	*template.Session
	expires time.Time
	// finishing is set while Finish runs: the session stays listed, so
	// that waiters never see a moment with neither a build nor a template,
	// but nothing else may take it.
	finishing bool
	// cache is where the template is pushed when it is finished, for a
	// request that named a fleet cache; cacheLock is the build lease held
	// in that registry meanwhile (nil when building without it).
	cache     *oci.Entry
	cacheLock *oci.Lock
}

// end releases what the session holds in a fleet cache.
func (bs *buildSession) end() {
	if bs.cacheLock != nil {
		bs.cacheLock.Unlock(context.Background())
	}
}

// abort throws the session away.
func (bs *buildSession) abort() {
	bs.Abort()
	bs.end()
}

func (b *builds) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// ready is the answer for a built template.
func ready(m *catalog.Meta) TemplateAnswer {
	return TemplateAnswer{Status: "ready", Hash: m.Hash, Template: TemplateOut(m)}
}

func (s *Server) beginTemplate(w http.ResponseWriter, r *http.Request) {
	var req TemplateRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	if req.Key == "" {
		fail(w, fmt.Errorf("%w: key is required: a hash of the files that define the template", errBadRequest))
		return
	}
	if req.Unkeyed() {
		fail(w, errtag.New(errUnkeyed, "template %s: its build runs code (migrations, an init command) but no file keys it: the key is only the command's text, so after a migration file changes every run still gets the old template, silently. Name the files the build reads in the client's files option, or opt out with allow_stale (the template then goes stale when those files change)", req.Name))
		return
	}
	ttl, err := duration("ttl_seconds", req.TTL, DefaultTTL, MaxTTL)
	if err != nil {
		fail(w, err)
		return
	}
	// The build account has every privilege on the build server, and the
	// database is quoted into SQL and named on disk: only a plain name, and
	// never a system schema (by default the database is the name).
	if err := catalog.ValidDatabase(req.Database); req.Database != "" && err != nil {
		fail(w, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	} else if err := catalog.ValidDatabase(req.Name); req.Database == "" && catalog.ValidName(req.Name) == nil && err != nil {
		fail(w, fmt.Errorf("%w: the template name is its database when none is given: %v; pass \"database\"", errBadRequest, err))
		return
	}
	opt := template.BuildOptions{Name: req.Name, Key: req.Key, Database: req.Database, DBsPerSlot: req.DBsPerSlot, Profile: mariadb.DefaultProfile()}
	// A group builds under a key of its own: the key it names never
	// reaches another group's template. The operator's template of the
	// same inputs is the group's to use.
	group, isGroup := tokenGroup(r)
	if isGroup {
		if m := s.operatorTemplate(r.Context(), opt); m != nil {
			writeJSON(w, 200, ready(m))
			return
		}
		opt.Key = catalog.GroupKey(group, req.Key)
	}
	// The key is computed once, here; the fleet cache and the session
	// take the plan.
	plan, err := s.builder.Plan(r.Context(), opt)
	if err != nil {
		fail(w, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	}
	defer plan.Close()
	var entry *oci.Entry
	var lock *oci.Lock
	if req.Cache != "" {
		var done bool
		if entry, lock, done = s.cachedBegin(w, r, req, plan); done {
			return
		}
	}
	sess, m, err := plan.Begin(context.WithoutCancel(r.Context()))
	if err != nil || m != nil {
		if lock != nil {
			lock.Unlock(context.WithoutCancel(r.Context()))
		}
	}
	switch {
	case errors.Is(err, template.ErrBuilding):
		writeJSON(w, http.StatusLocked, TemplateAnswer{Status: "building", Error: err.Error()})
		return
	case err != nil:
		fail(w, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	case m != nil && !sees(r, m.Group):
		fail(w, fmt.Errorf("%w: template %s (%s) was built by another group: pick another name or key", errConflict, m.Name, m.Hash[:12]))
		return
	case m != nil:
		writeJSON(w, 200, ready(m))
		return
	}
	sess.Meta.Group = group // recorded in its meta.json when it is finished
	s.builds.mu.Lock()
	s.builds.sessions[sess.Hash()] = &buildSession{Session: sess, expires: time.Now().Add(ttl), cache: entry, cacheLock: lock}
	delete(s.builds.failed, sess.Hash())
	s.builds.mu.Unlock()
	in, meta := sess.Inst, sess.Meta
	db := meta.Database()
	s.log.Info("template build session", "template", meta.Name, "hash", meta.Hash[:12], "port", in.Config.Port)
	writeJSON(w, http.StatusCreated, TemplateAnswer{Status: "build", Hash: meta.Hash,
		Host: "127.0.0.1", Port: in.Config.Port, Socket: in.Config.Socket(), User: meta.User, Password: api.Reveal(meta.Password),
		Database: db, DSN: dsn.TCP(in.Config.Port, meta.User, meta.Password, db),
		URL: dsn.URL(in.Config.Port, meta.User, meta.Password, db), Env: sess.Env()})
}

// takeSession removes and returns the session of a hash that request r
// may change, unless it is being finished. Another group's session is
// not there (nil); the operator's, for a group, is refused.
func (s *Server) takeSession(r *http.Request, hash string) (*buildSession, error) {
	s.builds.mu.Lock()
	defer s.builds.mu.Unlock()
	bs := s.builds.sessions[hash]
	if bs == nil || bs.finishing || !sees(r, bs.Meta.Group) {
		return nil, nil
	}
	if err := mayChange(r, bs.Meta.Group, "the build session "+hash); err != nil {
		return nil, err
	}
	delete(s.builds.sessions, hash)
	return bs, nil
}

func (s *Server) failSession(hash, group, why string) {
	s.builds.mu.Lock()
	s.builds.failed[hash] = failedBuild{why: why, group: group}
	s.builds.signal()
	s.builds.mu.Unlock()
}

func (s *Server) finishTemplate(w http.ResponseWriter, r *http.Request) {
	hash := r.PathValue("hash")
	s.builds.mu.Lock()
	bs := s.builds.sessions[hash]
	if bs != nil && (bs.finishing || !sees(r, bs.Meta.Group)) {
		bs = nil
	}
	if bs != nil {
		if err := mayChange(r, bs.Meta.Group, "the build session "+hash); err != nil {
			s.builds.mu.Unlock()
			fail(w, err)
			return
		}
		bs.finishing = true
	}
	s.builds.mu.Unlock()
	if bs == nil {
		fail(w, fmt.Errorf("%w: no build session %q (or it is being finished): begin one with POST /v1/templates", catalog.ErrNotFound, hash))
		return
	}
	m, err := bs.Finish(context.WithoutCancel(r.Context()))
	if err == nil && bs.cache != nil {
		// Pushed before the answer: once the builder hears "ready", the
		// fleet can pull it. A failed push is logged and costs others a
		// build, nothing more.
		_ = bs.cache.Push(context.WithoutCancel(r.Context()), s.builder, m)
	}
	bs.end()
	s.builds.mu.Lock()
	delete(s.builds.sessions, hash)
	if err != nil {
		s.builds.failed[hash] = failedBuild{why: err.Error(), group: bs.Meta.Group}
	}
	s.builds.signal()
	s.builds.mu.Unlock()
	if err != nil {
		fail(w, err)
		return
	}
	s.log.Info("template built", "template", m.Name, "hash", m.Hash[:12], "seconds", m.BuildSeconds, "phases", bs.Timeline())
	writeJSON(w, 200, ready(m))
}

// getTemplate answers a lookup by name, hash or key; with ?wait=SECONDS it
// blocks while the template is being built.
func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	var wait time.Duration
	if q := r.URL.Query().Get("wait"); q != "" {
		v, err := strconv.ParseFloat(q, 64)
		if err != nil {
			v = math.NaN()
		}
		if v == 0 {
			v = 1e-9 // no wait: one look
		}
		if wait, err = duration("wait", v, 0, MaxWait); err != nil {
			fail(w, err)
			return
		}
	}
	deadline := time.Now().Add(wait)
	// A group's key is looked up as its own (catalog.GroupKey).
	key := ref
	if g, isGroup := tokenGroup(r); isGroup {
		key = catalog.GroupKey(g, ref)
	}
	for {
		if m, err := s.findTemplate(r, ref); err == nil {
			writeJSON(w, 200, ready(m))
			return
		}
		s.builds.mu.Lock()
		f, failed := s.builds.failed[ref]
		failed = failed && sees(r, f.group)
		building := false
		for h, bs := range s.builds.sessions {
			if (h == ref || bs.Meta.Key == ref || bs.Meta.Key == key || bs.Meta.Name == ref) && sees(r, bs.Meta.Group) {
				building = true
			}
		}
		changed := s.builds.changed
		s.builds.mu.Unlock()
		switch {
		case failed:
			writeJSON(w, http.StatusGone, TemplateAnswer{Status: "failed", Hash: ref, Error: f.why})
			return
		case !building:
			// A session is dropped only once its template is stored: one
			// finished since the lookup above is there now.
			if m, err := s.findTemplate(r, ref); err == nil {
				writeJSON(w, 200, ready(m))
				return
			}
			fail(w, fmt.Errorf("%w: %q", catalog.ErrNotFound, ref))
			return
		case time.Now().After(deadline):
			writeJSON(w, http.StatusLocked, TemplateAnswer{Status: "building", Hash: ref})
			return
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
		case <-r.Context().Done():
			return
		}
	}
}

// deleteTemplate aborts a build session, or removes a built template that
// no pool uses: a group token's holder only its group's.
func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	bs, err := s.takeSession(r, ref)
	if err != nil {
		fail(w, err)
		return
	}
	if bs != nil {
		bs.abort()
		s.failSession(ref, bs.Meta.Group, "the builder aborted the build")
		writeJSON(w, 200, TemplateAnswer{Status: "failed", Hash: ref, Error: "aborted"})
		return
	}
	m, err := s.findTemplate(r, ref)
	if err != nil {
		fail(w, err)
		return
	}
	if err := mayChange(r, m.Group, "template "+m.Name+" ("+m.Hash[:12]+")"); err != nil {
		fail(w, err)
		return
	}
	inUse := func(hash string) bool {
		for _, n := range s.poolNames() {
			if p, err := s.pool(n); err == nil && p.Meta.Hash == hash {
				return true
			}
		}
		return false
	}
	if force := r.URL.Query().Get("force"); force != "1" && force != "true" {
		if err := s.cat.CheckChildren(m); err != nil {
			fail(w, fmt.Errorf("%w (DELETE /v1/templates/%s?force=1)", err, m.Name))
			return
		}
	}
	if err := s.cat.Remove(m, inUse); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, TemplateAnswer{Status: "removed", Hash: m.Hash, Template: TemplateOut(m)})
}

// expireBuilds aborts build sessions whose builder went quiet.
func (s *Server) expireBuilds() {
	now := time.Now()
	s.builds.mu.Lock()
	var doomed []*buildSession
	for h, bs := range s.builds.sessions {
		if now.After(bs.expires) && !bs.finishing {
			doomed = append(doomed, bs)
			delete(s.builds.sessions, h)
		}
	}
	s.builds.mu.Unlock()
	for _, bs := range doomed {
		bs.abort()
		s.failSession(bs.Hash(), bs.Meta.Group, "the build session expired before it was finished")
		s.log.Warn("template build session expired", "template", bs.Meta.Name, "hash", bs.Hash()[:12])
	}
}

// abortBuilds throws away every open build session (daemon shutdown).
func (s *Server) abortBuilds() {
	s.builds.mu.Lock()
	var all []*buildSession
	for h, bs := range s.builds.sessions {
		if !bs.finishing { // a finishing session ends on its own
			all = append(all, bs)
			delete(s.builds.sessions, h)
		}
	}
	s.builds.mu.Unlock()
	for _, bs := range all {
		bs.abort()
	}
}
