package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
)

// fork makes a template from a lease's current state (POST
// /v1/leases/{id}/fork; docs/architecture.md, "Fork"). Only the lease's
// group may fork it (another group's lease is not there: 404). With a
// key, the fork is filed under the parent's key and the caller's (a
// group's key scoped by its group, as its builds are), and a second fork
// with the same key answers at once with the first.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	var req api.ForkRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	if err := catalog.ValidName(req.Name); err != nil {
		fail(w, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	}
	if len(req.Key) > 256 {
		fail(w, fmt.Errorf("%w: key is %d characters: at most 256 (a hash of the fixtures)", errBadRequest, len(req.Key)))
		return
	}
	id := r.PathValue("id")
	p, err := s.callerLease(r, id)
	if err != nil {
		fail(w, err)
		return
	}
	if err := s.forkNameFree(req.Name, p.Meta); err != nil {
		fail(w, err)
		return
	}
	group, isGroup := tokenGroup(r)
	key := req.Key
	if isGroup && key != "" {
		key = catalog.GroupKey(group, key)
	}
	start := time.Now()
	tl := template.NewTimeline()
	m, built, err := s.builder.Fork(template.WithTimeline(r.Context(), tl), p.Meta, template.ForkOptions{Name: req.Name, Key: key, Group: group, Lease: id},
		func(dst string) error { return p.Snapshot(r.Context(), id, dst) })
	if errors.Is(err, pool.ErrForkBusy) || errors.Is(err, pool.ErrForkShared) {
		err = fmt.Errorf("%w: %v", errConflict, err)
	}
	if err != nil {
		fail(w, err)
		return
	}
	took := time.Since(start)
	s.log.Info("fork", "lease", id, "template", m.Name, "hash", m.Hash[:12], "parent", p.Meta.Name, "built", built, "seconds", took.Seconds(), "phases", tl)
	a := api.ForkAnswer{Template: TemplateOut(m), Built: built, Seconds: took.Seconds()}
	for _, ph := range tl.Phases() {
		a.Phases = append(a.Phases, api.Phase{Name: ph.Name, Seconds: ph.Seconds})
	}
	writeJSON(w, 200, a)
}

// forkNameFree refuses a fork a name that a template other than a fork of
// the same parent has: pools and leases go by name, and the newest
// template of a name is the one they take.
func (s *Server) forkNameFree(name string, parent *catalog.Meta) error {
	all, err := s.cat.List()
	if err != nil {
		return err
	}
	for _, o := range all {
		if o.Name == name && o.Parent != parent.Hash {
			return fmt.Errorf("%w: %s is the name of template %s, which is not a fork of %s: give the fork another name", errConflict, name, o.Hash[:12], parent.Name)
		}
	}
	return nil
}
