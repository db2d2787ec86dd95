package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
)

// Runner groups on a shared node (docs/security.md, "Runner groups on a
// shared node"). A request made with a group token (--group-tokens) is a
// tenant's; the unix socket and the root's own token are the operator's.
// A group's builds are filed under catalog.GroupKey and marked with its
// group, so no key it names reaches another group's template. A group
// sees, pools and leases its own templates and the operator's; another
// group's answer 404, as their leases do. It finishes, aborts, removes and
// brings down only what it built (the operator's: 403). Its pools keep
// the node's per-slot limits and stay within --max-slots-per-group.

// MaxGroupBufferPool is the largest InnoDB buffer pool a group token may
// give the slots of a pool it brings up: a slot's memory cgroup is sized
// from it (pool.memLimit), so it may not lift a slot's memory bound.
const MaxGroupBufferPool = 256 << 20

// DefaultMaxSlotsPerGroup is the slot cap of a group when neither
// --max-slots-per-group nor --max-leases-per-group is given.
const DefaultMaxSlotsPerGroup = 64

// templateRank orders the templates request r may use for a lookup by
// name or key (catalog.Find): the caller's own first, then the
// operator's; for a group, another group's are not there (-1). The
// operator sees every template, its own first.
func templateRank(r *http.Request) func(*catalog.Meta) int {
	g, isGroup := tokenGroup(r)
	return func(m *catalog.Meta) int {
		switch {
		case m.Group == g:
			return 0
		case m.Group == "", !isGroup:
			return 1
		}
		return -1
	}
}

// sees tells whether request r may use what a group built ("" for the
// operator's).
func sees(r *http.Request, group string) bool {
	g, isGroup := tokenGroup(r)
	return !isGroup || group == "" || group == g
}

// mayChange refuses a group token's holder a change to what it may use
// but did not build (the operator's templates, builds and pools).
func mayChange(r *http.Request, group, what string) error {
	g, isGroup := tokenGroup(r)
	if !isGroup || group == g {
		return nil
	}
	return fmt.Errorf("%w: %s is the node operator's: a group token (group %s) may use it, and remove, finish or bring down only what its group built; ask the node's operator", errForbidden, what, g)
}

// findTemplate finds a template request r may use, by name, hash or key:
// for a group, the key it names is its own (catalog.GroupKey) first.
func (s *Server) findTemplate(r *http.Request, ref string) (*catalog.Meta, error) {
	rank := templateRank(r)
	if g, isGroup := tokenGroup(r); isGroup {
		if m, err := s.cat.Find(catalog.GroupKey(g, ref), rank); err == nil {
			return m, nil
		}
	}
	return s.cat.Find(ref, rank)
}

// operatorTemplate is the template the operator built for opt (its
// plain key), which a group's build request is answered with; nil when
// there is none.
func (s *Server) operatorTemplate(ctx context.Context, opt template.BuildOptions) *catalog.Meta {
	hash, err := s.builder.Hash(ctx, opt)
	if err != nil {
		return nil
	}
	m, err := s.cat.Load(hash)
	if err != nil || m.Group != "" || catalog.CheckSecured(m) != nil {
		return nil
	}
	return m
}

// claim marks a template a request pulled from a fleet cache as the
// requester's (a group's, or the operator's), whatever its meta.json
// said: the group is the daemon's to record, never an archive's.
func (s *Server) claim(r *http.Request, m *catalog.Meta) {
	g, _ := tokenGroup(r)
	if m.Group == g {
		return
	}
	m.Group = g
	if err := s.cat.Touch(m); err != nil {
		s.log.Error("record a pulled template's group", "template", m.Name, "err", err)
	}
}

// visiblePool is s.pool for request r: another group's pool is not
// there for a group token's holder.
func (s *Server) visiblePool(r *http.Request, name string) (*pool.Pool, error) {
	return visible(r, name)(s.pool(name))
}

// visiblePoolWait is visiblePool of a pool that may still be coming up:
// it waits for it within ctx (poolWait).
func (s *Server) visiblePoolWait(ctx context.Context, r *http.Request, name string) (*pool.Pool, error) {
	return visible(r, name)(s.poolWait(ctx, name))
}

// visible hides a pool request r's group may not see as not up.
func visible(r *http.Request, name string) func(*pool.Pool, error) (*pool.Pool, error) {
	return func(p *pool.Pool, err error) (*pool.Pool, error) {
		if err == nil && !sees(r, p.Meta.Group) {
			return nil, fmt.Errorf("%w: no pool of template %q is up: run `pristine pool up --template %s --size N`", errNoPool, name, name)
		}
		return p, err
	}
}

// nameFree refuses a group a pool of its own template under the name of
// one of the operator's templates: pools go by template name, and the
// operator's pool of that name is every group's.
func (s *Server) nameFree(r *http.Request, m *catalog.Meta) error {
	if m.Group == "" {
		return nil
	}
	all, err := s.cat.List()
	if err != nil {
		return err
	}
	for _, o := range all {
		if o.Name == m.Name && o.Group == "" {
			return fmt.Errorf("%w: %s is the name of a template of the node's operator, whose pool every group leases: give your template another name", errConflict, m.Name)
		}
	}
	return nil
}

// groupPoolLimits refuses a group token's pool request beyond the node's
// per-slot limits: no "no cap" (-1), nothing above the defaults the
// operator's pools get unless it asks for more (DefaultSlotDisk,
// DefaultSlotMemory), and a buffer pool of at most MaxGroupBufferPool.
func groupPoolLimits(r *http.Request, req PoolRequest) error {
	g, isGroup := tokenGroup(r)
	if !isGroup {
		return nil
	}
	fix := "leave it out (or 0) for the default, or ask the node's operator to bring the pool up with `pristine pool up --template " + req.Template + "` and a larger cap"
	switch {
	case req.SlotDisk < 0:
		return fmt.Errorf("%w: slot_disk %d (no cap) is for the node's operator: a group token's (group %s) slots write at most %d bytes (1 GiB, the node's default slot disk); %s", errForbidden, req.SlotDisk, g, DefaultSlotDisk, fix)
	case req.SlotDisk > DefaultSlotDisk:
		return fmt.Errorf("%w: slot_disk %d is above the node's limit for a group token (group %s): at most %d bytes (1 GiB, the node's default slot disk); %s", errForbidden, req.SlotDisk, g, DefaultSlotDisk, fix)
	case req.SlotMemory < 0:
		return fmt.Errorf("%w: slot_memory %d (the server's own limits, which a lease can raise) is for the node's operator: a group token's (group %s) slots take at most %d bytes (256 MiB, the node's default slot memory); %s", errForbidden, req.SlotMemory, g, DefaultSlotMemory, fix)
	case req.SlotMemory > DefaultSlotMemory:
		return fmt.Errorf("%w: slot_memory %d is above the node's limit for a group token (group %s): at most %d bytes (256 MiB, the node's default slot memory); %s", errForbidden, req.SlotMemory, g, DefaultSlotMemory, fix)
	case req.BufferPool > MaxGroupBufferPool:
		return fmt.Errorf("%w: buffer_pool %d is above the node's limit for a group token (group %s): at most %d bytes (256 MiB); %s", errForbidden, req.BufferPool, g, MaxGroupBufferPool, fix)
	}
	return nil
}

// slotsPerGroup is the slot cap of a group in force: MaxSlotsPerGroup,
// else twice MaxLeasesPerGroup (its leases, and as many slots again for
// a second template's pool, e.g. while its migrations change), else
// DefaultMaxSlotsPerGroup.
func (s *Server) slotsPerGroup() int {
	switch {
	case s.MaxSlotsPerGroup > 0:
		return s.MaxSlotsPerGroup
	case s.MaxLeasesPerGroup > 0:
		return 2 * s.MaxLeasesPerGroup
	}
	return DefaultMaxSlotsPerGroup
}

// pendingPool is a pool a group's request is bringing up: its slots
// count against the group's cap before the pool is listed.
type pendingPool struct {
	group string
	size  int
}

// withinSlotCap runs then when request r may make the pool of m, named
// name, want slots large, holding the group's slot count still meanwhile
// (then grows the pool, or notes a pool coming up in s.upPending). The
// operator's requests are not capped. A group may make no pool larger
// than its cap, and the pools of its own templates together no larger
// either.
func (s *Server) withinSlotCap(r *http.Request, m *catalog.Meta, want int, then func() error) error {
	g, isGroup := tokenGroup(r)
	if !isGroup {
		return then()
	}
	s.slotsMu.Lock()
	defer s.slotsMu.Unlock()
	if p, err := s.pool(m.Name); err == nil && p.Meta.Hash == m.Hash && want <= p.Live() {
		return then() // no growth
	}
	limit := s.slotsPerGroup()
	flag := fmt.Sprintf("serve --max-slots-per-group %d", limit)
	if want > limit {
		return fmt.Errorf("%w: %d slots of %s are beyond group %s's cap of %d slots (%s): ask for fewer (fewer parallel processes), or ask the node's operator", errForbidden, want, m.Name, g, limit, flag)
	}
	if m.Group != g {
		return then() // the operator's template: its pool's size is capped alone
	}
	used := 0
	for _, n := range s.poolNames() {
		if p, err := s.pool(n); err == nil && n != m.Name && p.Meta.Group == g {
			used += p.Live()
		}
	}
	for n, pp := range s.upPending {
		if n != m.Name && pp.group == g {
			used += pp.size
		}
	}
	if used+want > limit {
		return fmt.Errorf("%w: group %s's other pools have %d slots, and %d slots of %s would take it beyond its cap of %d slots (%s): ask for fewer, or let the group bring down a pool it no longer uses (DELETE /v1/pools/NAME)", errForbidden, g, used, want, m.Name, limit, flag)
	}
	return then()
}

// addPending notes, under withinSlotCap's lock (in its then), that a
// pool of m is coming up with size slots for request r.
func (s *Server) addPending(r *http.Request, m *catalog.Meta, size int) {
	if g, isGroup := tokenGroup(r); isGroup {
		if s.upPending == nil {
			s.upPending = map[string]pendingPool{}
		}
		s.upPending[m.Name] = pendingPool{group: g, size: size}
	}
}

// donePending forgets the pool of name addPending noted, once it is up
// (its slots count as its own) or failed.
func (s *Server) donePending(name string) {
	s.slotsMu.Lock()
	delete(s.upPending, name)
	s.slotsMu.Unlock()
}
