package template

import (
	"context"
	"testing"
	"time"
)

// A phase that ends twice adds up; phases keep the order they first
// ended in; a context without a timeline records nothing and does not
// fail.
func TestTimeline(t *testing.T) {
	tl := NewTimeline()
	ctx := WithTimeline(context.Background(), tl)
	timelineOf(ctx).Mark(PhaseLoad)
	time.Sleep(2 * time.Millisecond)
	timelineOf(ctx).Mark(PhaseChecks)
	time.Sleep(2 * time.Millisecond)
	timelineOf(ctx).Mark(PhaseLoad)
	tl.Restart()
	got := tl.Phases()
	if len(got) != 2 || got[0].Name != PhaseLoad || got[1].Name != PhaseChecks {
		t.Fatalf("phases %+v, want %q then %q", got, PhaseLoad, PhaseChecks)
	}
	if got[0].Seconds < 0.002 || got[1].Seconds < 0.002 {
		t.Errorf("phases %+v: want each at least the 2 ms slept in it", got)
	}
	var none *Timeline
	none.Mark(PhaseLoad) // no timeline: nothing happens
	if timelineOf(context.Background()) != nil || none.Phases() != nil {
		t.Error("a context without a timeline has one")
	}
}
