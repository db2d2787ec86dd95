package template

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Timeline records where a build's wall time goes, phase by phase, from
// the moment it was asked for: the content key, the base data directory,
// its copy to RAM, the server's start, the load, the checks, the clean
// stop, the filing into the store. A caller that wants it (a benchmark,
// `template build --timings`) puts one in the build's context with
// WithTimeline; builds without one record nothing.
type Timeline struct {
	mu     sync.Mutex
	last   time.Time
	phases []Phase
}

// Phase is one step of a Timeline and the seconds it took; a step that
// ran more than once (the checks before and after the definers) adds up.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// Phase names the build records, in the order they run.
const (
	PhaseKey      = "content key"
	PhaseStage    = "lock, stage"
	PhaseBase     = "base data directory"
	PhaseRAMCopy  = "copy the base to RAM"
	PhaseSnapshot = "snapshot of the lease (redo, pages, clone)"
	PhaseStart    = "server start, account"
	PhaseLoad     = "load (SQL)"
	PhaseInit     = "init command"
	PhaseClient   = "the client's build (a session's migrations)"
	PhaseChecks   = "checks (keys, counters, MEMORY)"
	PhaseSecure   = "accounts secured"
	PhaseDefiners = "definers"
	PhaseExport   = "InnoDB export metadata"
	PhaseStop     = "slow clean stop"
	PhaseSeal     = "seal"
	PhaseFile     = "into the store"
	PhasePublish  = "publish"
	PhasePoolUp   = "pool up (clone, slot start)"
	PhaseLease    = "first lease"
)

// NewTimeline starts a timeline now.
func NewTimeline() *Timeline { return &Timeline{last: time.Now()} }

type timelineKey struct{}

// WithTimeline returns ctx carrying t: a build run with it records its
// phases there.
func WithTimeline(ctx context.Context, t *Timeline) context.Context {
	return context.WithValue(ctx, timelineKey{}, t)
}

// timelineOf returns the timeline in ctx, or nil (whose Mark does
// nothing).
func timelineOf(ctx context.Context) *Timeline {
	t, _ := ctx.Value(timelineKey{}).(*Timeline)
	return t
}

// Mark ends the phase name: the time since the previous Mark (or since
// the timeline began) is added to it. Safe on a nil Timeline.
func (t *Timeline) Mark(name string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	d := now.Sub(t.last).Seconds()
	t.last = now
	for i := range t.phases {
		if t.phases[i].Name == name {
			t.phases[i].Seconds += d
			return
		}
	}
	t.phases = append(t.phases, Phase{Name: name, Seconds: d})
}

// Phases returns the phases recorded so far, in the order they first
// ended.
func (t *Timeline) Phases() []Phase {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Phase(nil), t.phases...)
}

// String is the phases on one line, "name 0.123s, ...", for a log.
func (t *Timeline) String() string {
	var b strings.Builder
	for i, p := range t.Phases() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.3fs", p.Name, p.Seconds)
	}
	return b.String()
}

// Restart begins the next phase now, dropping the time since the last
// Mark (work the caller does not want counted).
func (t *Timeline) Restart() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
}
