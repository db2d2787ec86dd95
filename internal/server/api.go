package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/state"
)

// The wire types of the API are package api's; these names keep the
// daemon's code short.
type (
	PoolRequest   = api.PoolRequest
	PoolEvent     = api.PoolEvent
	LeaseRequest  = api.LeaseRequest
	ReleaseResult = api.ReleaseResult
	ExtendRequest = api.ExtendRequest
	ErrorBody     = api.ErrorBody
)

// DefaultSlotDisk is the disk cap of a slot when pool up names none: room
// for the redo log rewritten in full (48 MB) and a few hundred MB of test
// data, while a runaway test stops long before a scratch filesystem of
// the default 8 GB is full.
const DefaultSlotDisk = 1 << 30

// MaxSlotDisk bounds a pool request's slot_disk (1 PiB): more is no cap,
// and the hard cap's headroom is computed from it. NoSlotDisk (-1) asks for
// no cap (`pool up --slot-disk none`); other negative values are refused.
const (
	MaxSlotDisk = 1 << 50
	NoSlotDisk  = -1
)

// DefaultSlotMemory is the memory ceiling of a slot when pool up names
// none (pool.Options.SlotMemory): far more than a test's MEMORY table or
// sort needs, a small part of a CI machine's memory.
const DefaultSlotMemory = 256 << 20

// minSlotMemory is the smallest memory ceiling pool up takes: below it
// the server's own buffers (sort, join, read) do not fit in a session.
const minSlotMemory = 16 << 20

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("GET /v1/series", func(w http.ResponseWriter, r *http.Request) {
		window := 5 * time.Minute
		if v, err := time.ParseDuration(r.URL.Query().Get("window")); err == nil && v > 0 && v <= recentWindow {
			window = v
		}
		writeJSON(w, 200, s.metrics.recent.series(window))
	})
	mux.Handle("GET /{$}", dashboardHandler())
	mux.HandleFunc("GET /v1/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(openapiSpec)
	})
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"ok": true, "pools": s.poolNames()})
	})
	mux.HandleFunc("GET /v1/templates", s.listTemplates)
	mux.HandleFunc("POST /v1/templates", s.beginTemplate)
	mux.HandleFunc("GET /v1/templates/{ref}", s.getTemplate)
	mux.HandleFunc("PUT /v1/templates/{hash}", s.finishTemplate)
	mux.HandleFunc("DELETE /v1/templates/{ref}", s.deleteTemplate)
	mux.HandleFunc("GET /v1/pools", s.listPools)
	mux.HandleFunc("GET /v1/pools/{template}", s.getPool)
	mux.HandleFunc("POST /v1/pools", s.poolUp)
	mux.HandleFunc("DELETE /v1/pools/{template}", s.poolDown)
	mux.HandleFunc("POST /v1/leases", s.lease)
	mux.HandleFunc("GET /v1/leases", s.listLeases)
	mux.HandleFunc("GET /v1/leases/{id}", s.getLease)
	mux.HandleFunc("DELETE /v1/leases/{id}", s.release)
	mux.HandleFunc("POST /v1/leases/{id}/keep", s.keep)
	mux.HandleFunc("POST /v1/leases/{id}/extend", s.extend)
	mux.HandleFunc("POST /v1/leases/{id}/fork", s.fork)
	mux.HandleFunc("POST /v1/shutdown", func(w http.ResponseWriter, r *http.Request) {
		// Answer only once every pool is down, so the caller can rely on it.
		s.downAll()
		writeJSON(w, 200, map[string]any{"ok": true})
		go s.stop()
	})
	return mux
}

// fail writes err with the status code its kind maps to.
func fail(w http.ResponseWriter, err error) {
	writeJSON(w, statusOf(err), ErrorBody{Error: err.Error(), Code: codeOf(err)})
}

// codeOf names the kinds of error a client answers in its own terms
// (ErrorBody.Code), in one place; "" for the others.
func codeOf(err error) string {
	if errors.Is(err, errUnkeyed) {
		return api.CodeUnkeyedBuild
	}
	return ""
}

// statusOf maps an error's kind to an HTTP status, in one place.
func statusOf(err error) int {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	case errors.Is(err, errForbidden):
		code = http.StatusForbidden
	case errors.Is(err, catalog.ErrNotFound), errors.Is(err, errNoPool), errors.Is(err, pool.ErrUnknownLease):
		code = http.StatusNotFound
	case errors.Is(err, pool.ErrLeaseLost):
		code = http.StatusGone
	case errors.Is(err, errConflict), errors.Is(err, catalog.ErrInUse), errors.Is(err, catalog.ErrHasChildren):
		code = http.StatusConflict
	case errors.Is(err, pool.ErrLeaseTimeout), errors.Is(err, pool.ErrClosed), errors.Is(err, errComingUp):
		code = http.StatusServiceUnavailable
	case errors.Is(err, errOverCap):
		code = http.StatusTooManyRequests
	case errors.Is(err, pool.ErrNoRoom):
		code = http.StatusInsufficientStorage
	}
	return code
}

var (
	errBadRequest = errors.New("bad request")
	errConflict   = errors.New("conflict")
	// errUnkeyed is a template request whose build runs code that no
	// file keys (api.TemplateRequest.Unkeyed).
	errUnkeyed = fmt.Errorf("%w: unkeyed build", errBadRequest)
)

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: malformed JSON body: %v", errBadRequest, err)
	}
	return nil
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	all, err := s.cat.List()
	if err != nil {
		fail(w, err)
		return
	}
	out := all[:0:0]
	for _, m := range all {
		if sees(r, m.Group) {
			out = append(out, m) // a group lists its own and the operator's
		}
	}
	writeJSON(w, 200, TemplatesOut(out))
}

func (s *Server) listPools(w http.ResponseWriter, r *http.Request) {
	out := []api.PoolStatus{}
	for _, n := range s.poolNames() {
		if p, err := s.pool(n); err == nil && sees(r, p.Meta.Group) {
			out = append(out, StatusOut(p.Status(false)))
		}
	}
	writeJSON(w, 200, out)
}

func (s *Server) getPool(w http.ResponseWriter, r *http.Request) {
	p, err := s.visiblePool(r, r.PathValue("template"))
	if err != nil {
		fail(w, err)
		return
	}
	out := StatusOut(p.Status(true))
	// The disk walk reads every file of every slot: only when asked for,
	// not for a client that polls the status while slots reset.
	if r.URL.Query().Get("disk") == "true" {
		out.Disk = p.DiskUse()
	}
	writeJSON(w, 200, out)
}

// poolUp brings a pool up and streams its progress as NDJSON.
func (s *Server) poolUp(w http.ResponseWriter, r *http.Request) {
	var req PoolRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	if req.Size < 1 || req.Size > pool.MaxSlots {
		fail(w, fmt.Errorf("%w: size must be from 1 to %d", errBadRequest, pool.MaxSlots))
		return
	}
	if req.SlotDisk < NoSlotDisk || req.SlotDisk > MaxSlotDisk {
		fail(w, fmt.Errorf("%w: slot_disk is %d: it must be from 0 to %d bytes (1 PiB), or -1 for no cap; 0 or absent means %d (1 GiB)", errBadRequest, req.SlotDisk, int64(MaxSlotDisk), DefaultSlotDisk))
		return
	}
	if req.SlotMemory > 0 && req.SlotMemory < minSlotMemory {
		fail(w, fmt.Errorf("%w: slot_memory is %d bytes: it must be at least %d (16 MiB), 0 for the default of %d (256 MiB), or negative for none", errBadRequest, req.SlotMemory, minSlotMemory, DefaultSlotMemory))
		return
	}
	if err := groupPoolLimits(r, req); err != nil {
		fail(w, err)
		return
	}
	if req.MinReady < 0 {
		fail(w, fmt.Errorf("%w: min_ready is %d: it must be 0 (the first round of starts) or more", errBadRequest, req.MinReady))
		return
	}
	m, err := s.findTemplate(r, req.Template)
	if err != nil {
		fail(w, err)
		return
	}
	if err := s.nameFree(r, m); err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	if p, ok := s.pools[m.Name]; ok {
		s.mu.Unlock()
		if p != nil && p.Meta.Hash == m.Hash && req.Size > p.Live() {
			s.growUp(w, r, p, req.Size)
			return
		}
		fail(w, fmt.Errorf("%w: a pool of %s is up already: `pristine pool down --template %s` first", errConflict, m.Name, m.Name))
		return
	}
	s.pools[m.Name] = nil // reserve the name while it comes up
	s.mu.Unlock()
	err = s.withinSlotCap(r, m, req.Size, func() error { s.addPending(r, m, req.Size); return nil })
	defer s.donePending(m.Name)
	if err != nil {
		s.dropPool(m.Name, nil)
		fail(w, err)
		return
	}

	if req.SlotDisk == 0 {
		req.SlotDisk = DefaultSlotDisk
	}
	if req.SlotMemory == 0 {
		req.SlotMemory = DefaultSlotMemory
	}
	rec := state.Pool{Template: m.Name, Hash: m.Hash, Size: req.Size, BufferPool: req.BufferPool, Parallel: req.Parallel, SlotDisk: req.SlotDisk, SlotMemory: req.SlotMemory}
	opt := s.poolOptions(rec, nil)
	if err := s.makeRoom(m, opt.Profile, req.Size); err != nil {
		s.dropPool(m.Name, nil)
		fail(w, err)
		return
	}
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	var mu sync.Mutex
	answered := false // the stream is over; the start goes on without it
	send := func(ev PoolEvent) {
		mu.Lock()
		defer mu.Unlock()
		if answered {
			return
		}
		_ = enc.Encode(ev)
		if flusher != nil {
			flusher.Flush()
		}
	}
	defer func() {
		mu.Lock()
		answered = true
		mu.Unlock()
	}()
	last := time.Now()
	opt.Progress = func(ready, total int) {
		if ready == total || time.Since(last) > 200*time.Millisecond {
			last = time.Now()
			send(PoolEvent{Ready: ready, Total: total})
		}
	}
	parallel := opt.Parallel
	if parallel <= 0 {
		parallel = pool.DefaultParallel()
	}
	opt.MinReady = minReady(req.MinReady, req.Size, parallel)
	p, err := pool.Prepare(s.cat, s.builder.Binary(), m, opt)
	if err != nil {
		s.dropPool(m.Name, nil)
		fail(w, err)
		return
	}
	// Registered before any slot starts: a lease waits for the first
	// slot that answers, pool status shows the slots starting, pool down
	// stops the start.
	s.setPool(m.Name, p)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	// A client that goes away (Ctrl-C on `pool up`) before min_ready slots
	// answered abandons the pool: what was started is stopped and removed.
	if err := p.Start(r.Context()); err != nil {
		s.dropPool(m.Name, p)
		s.log.Error("pool up", "template", m.Name, "err", err)
		send(PoolEvent{Error: err.Error(), Code: statusOf(err)})
		s.stopIfIdle()
		return
	}
	if perr := s.state.PutPool(rec); perr != nil {
		s.log.Error("record pool", "template", m.Name, "err", perr)
	}
	st := p.Status(false)
	s.log.Info("pool up", "template", m.Name, "size", req.Size, "ready", st.States[pool.Ready], "starting", st.States[pool.Starting], "seconds", st.Stats.UpSeconds)
	out := StatusOut(st)
	send(PoolEvent{Status: &out})
}

// minReady is how many slots a pool up of size slots, parallel at a
// time, waits for: asked (at most size), or by default the first round of
// starts, min(size, parallel): up in about a second (200 demo slots on 2
// cores: 1.0-2.3 s, the first slot at 0.4-0.7 s), enough for a test
// runner's first workers (one or a few per core) to find a slot each;
// leases never wait for pool up anyway.
func minReady(asked, size, parallel int) int {
	if asked > 0 {
		return min(asked, size)
	}
	return min(size, parallel)
}

func (s *Server) poolDown(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("template")
	p, err := s.visiblePool(r, name)
	if err != nil {
		fail(w, err)
		return
	}
	if err := mayChange(r, p.Meta.Group, "the pool of "+p.Meta.Name); err != nil {
		fail(w, err)
		return
	}
	s.dropPool(p.Meta.Name, p)
	st := p.Status(false)
	if err := p.Down(r.Context()); err != nil {
		fail(w, err)
		return
	}
	_ = s.state.DeletePool(p.Meta.Name)
	s.log.Info("pool down", "template", p.Meta.Name)
	writeJSON(w, 200, StatusOut(st))
	s.stopIfIdle()
}

func (s *Server) stopIfIdle() {
	if !s.ExitWhenIdle {
		return
	}
	s.mu.Lock()
	idle := len(s.pools) == 0
	s.mu.Unlock()
	if idle {
		go s.stop()
	}
}

func (s *Server) lease(w http.ResponseWriter, r *http.Request) {
	var req LeaseRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	ttl, err := duration("ttl_seconds", req.TTL, DefaultTTL, MaxTTL)
	if err != nil {
		fail(w, err)
		return
	}
	wait, err := duration("wait_seconds", req.Wait, DefaultWait, MaxWait)
	if err != nil {
		fail(w, err)
		return
	}
	group, err := groupOf(r)
	if err != nil {
		fail(w, err)
		return
	}
	if remotePeer(r) {
		req.PID = 0 // a process of another host: the TTL reclaims its leases
	}
	leave, ok := s.enterWaiter(w)
	if !ok {
		return
	}
	defer leave()
	unreserve, err := s.reserveGroup(group)
	if err != nil {
		fail(w, err)
		return
	}
	defer unreserve()
	// The wait covers a pool whose pool up has not made it yet, too.
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	p, err := s.visiblePoolWait(ctx, r, req.Template)
	if err != nil {
		fail(w, err)
		return
	}
	if req.MinSize < 0 || req.MinSize > pool.MaxSlots {
		fail(w, fmt.Errorf("%w: min_size is %d: it must be from 0 (no growth) to %d slots", errBadRequest, req.MinSize, pool.MaxSlots))
		return
	}
	if req.MinSize > 0 {
		var n int
		err := s.withinSlotCap(r, p.Meta, req.MinSize, func() (err error) { n, err = s.grow(p, req.MinSize); return err })
		if err != nil {
			fail(w, err)
			return
		}
		if n > 0 {
			w.Header().Set(GrownHeader, strconv.Itoa(n))
		}
	}
	l, err := p.Lease(ctx, pool.LeaseOptions{Holder: req.Holder, TTL: ttl, PID: req.PID, Group: group})
	unreserve() // held now (or failed): counted among the group's leases
	if err != nil {
		fail(w, err)
		return
	}
	if r.Context().Err() != nil {
		// The client left while the lease was being made: nobody holds it.
		_, _ = p.Release(context.Background(), l.ID, pool.Dirty)
		return
	}
	s.log.Info("lease", "id", l.ID, "template", l.Template, "slot", l.Slot, "holder", l.Holder)
	writeJSON(w, 200, leaseFor(*l))
}

// GrownHeader, on a lease answer, says how many slots the request's
// min_size grew the pool by.
const GrownHeader = "Pristine-Pool-Grown"

// growUp answers a request for a larger pool of a template already up:
// the pool grows to size at once, or the request fails naming the limit.
func (s *Server) growUp(w http.ResponseWriter, r *http.Request, p *pool.Pool, size int) {
	var n int
	err := s.withinSlotCap(r, p.Meta, size, func() (err error) { n, err = s.grow(p, size); return err })
	if err != nil {
		fail(w, err)
		return
	}
	out := StatusOut(p.Status(false))
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(PoolEvent{Status: &out, Grown: n})
}

func (s *Server) listLeases(w http.ResponseWriter, r *http.Request) {
	out := []api.Lease{}
	for _, n := range s.poolNames() {
		if p, err := s.pool(n); err == nil {
			for _, l := range p.Leases() {
				if g, ok := tokenGroup(r); ok && l.Group != g {
					continue // a runner lists its own group's leases
				}
				out = append(out, leaseOut(l))
			}
		}
	}
	writeJSON(w, 200, out)
}

// callerLease is the pool of lease id, when the caller may act on it: a
// runner group's token reaches only its group's leases.
func (s *Server) callerLease(r *http.Request, id string) (*pool.Pool, error) {
	p, err := s.findLease(id)
	if err != nil {
		return nil, err
	}
	if err := ownGroup(r, p, id); err != nil {
		return nil, err
	}
	return p, nil
}

// findLease returns the pool holding lease id.
func (s *Server) findLease(id string) (*pool.Pool, error) {
	for _, n := range s.poolNames() {
		if p, err := s.pool(n); err == nil {
			if _, ok := p.Get(id); ok {
				return p, nil
			}
		}
	}
	for _, n := range s.poolNames() {
		if p, err := s.pool(n); err == nil {
			if rec, ok := p.Lost(id); ok {
				return nil, fmt.Errorf("%w: %w", pool.ErrLeaseLost, rec)
			}
		}
	}
	if raw, ok := s.state.Lost(id); ok {
		var rec pool.LostLease
		if json.Unmarshal(raw, &rec) == nil {
			return nil, fmt.Errorf("%w: %w", pool.ErrLeaseLost, rec)
		}
	}
	return nil, fmt.Errorf("%w %q: it was released already, or never existed (see `pristine pool status`)", pool.ErrUnknownLease, id)
}

// getLease returns a lease with its credentials, to a caller that may use
// the API (the socket's owner, or a holder of the token).
func (s *Server) getLease(w http.ResponseWriter, r *http.Request) {
	p, err := s.callerLease(r, r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	l, _ := p.Get(r.PathValue("id"))
	writeJSON(w, 200, leaseFor(l))
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	mode := pool.Dirty
	switch r.URL.Query().Get("mode") {
	case "", "dirty":
	case "unchanged":
		mode = pool.Unchanged
	default:
		fail(w, fmt.Errorf("%w: mode must be dirty or unchanged", errBadRequest))
		return
	}
	wait := r.URL.Query().Get("wait")
	if wait != "" && wait != "true" && wait != "1" && wait != "false" && wait != "0" {
		fail(w, fmt.Errorf("%w: wait must be true or false", errBadRequest))
		return
	}
	p, err := s.callerLease(r, id)
	if err != nil {
		fail(w, err)
		return
	}
	res, err := releaseLease(r.Context(), p, id, mode, wait == "true" || wait == "1")
	if err != nil {
		fail(w, err)
		return
	}
	s.log.Info("release", "id", id, "template", p.Meta.Name, "reset", res.Reset, "checking", res.Checking)
	writeJSON(w, 200, res)
}

// releaseLease ends lease id of p. An unchanged release's check runs in
// the background, off the holder's clock, unless wait (?wait=true) asks
// for its verdict.
func releaseLease(ctx context.Context, p *pool.Pool, id string, mode pool.ReleaseMode, wait bool) (ReleaseResult, error) {
	if wait {
		reset, err := p.Release(ctx, id, mode)
		return ReleaseResult{Released: id, Reset: reset}, err
	}
	checking, err := p.ReleaseAsync(id, mode)
	return ReleaseResult{Released: id, Reset: true, Checking: checking}, err
}

func (s *Server) keep(w http.ResponseWriter, r *http.Request) {
	p, err := s.callerLease(r, r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	l, err := p.Keep(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	// The DSN is logged so a failed test's database can be found; the
	// password is not.
	s.log.Warn("lease kept for debugging", "id", l.ID, "template", l.Template, "slot", l.Slot,
		"host", l.Host, "port", l.Port, "socket", l.Socket, "user", l.User, "database", l.Database)
	writeJSON(w, 200, leaseFor(*l))
}

func (s *Server) extend(w http.ResponseWriter, r *http.Request) {
	var req ExtendRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	ttl, err := duration("ttl_seconds", req.TTL, 0, MaxTTL)
	if err != nil {
		fail(w, err)
		return
	}
	p, err := s.callerLease(r, r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	l, err := p.Extend(r.PathValue("id"), ttl)
	if err != nil {
		fail(w, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	}
	writeJSON(w, 200, leaseFor(*l))
}
