package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
)

// TestGrowAndShrinkIdle grows a pool of 2 to 4 while both its slots are
// leased, leases the new slots without any release, shrinks the idle
// extra slots back to the base size and grows again onto a retired slot.
func TestGrowAndShrinkIdle(t *testing.T) {
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())

	held := []*pool.Lease{lease(t, p), lease(t, p)}
	if n, err := p.Grow(4); err != nil || n != 2 {
		t.Fatalf("Grow(4) on a pool of 2 = %d, %v; want 2 slots added", n, err)
	}
	if n, err := p.Grow(4); err != nil || n != 0 {
		t.Fatalf("Grow(4) again = %d, %v; want nothing added (the slots are starting)", n, err)
	}
	// Nothing is released: the two leases can only come from new slots.
	held = append(held, lease(t, p), lease(t, p))
	slots := map[int]bool{}
	for _, l := range held {
		slots[l.Slot] = true
		if got := canary(t, open(t, l)); got != "pristine,pristine" {
			t.Fatalf("slot %d: canary %q", l.Slot, got)
		}
	}
	if len(slots) != 4 {
		t.Fatalf("4 leases on %d slots: %v", len(slots), slots)
	}
	if st := p.Status(false); st.Size != 4 || st.Base != 2 || st.Stats.Grown != 2 {
		t.Fatalf("after growing: size %d base %d grown %d; want 4, 2, 2", st.Size, st.Base, st.Stats.Grown)
	}
	// Leased slots are never shrunk.
	if n := p.ShrinkIdle(0, time.Now().Add(time.Hour)); n != 0 {
		t.Fatalf("ShrinkIdle retired %d leased slots", n)
	}
	for _, l := range held {
		if _, err := p.Release(context.Background(), l.ID, pool.Dirty); err != nil {
			t.Fatal(err)
		}
	}
	waitReady(t, p, 4)
	// Not idle long enough: nothing goes.
	if n := p.ShrinkIdle(time.Hour, time.Now()); n != 0 {
		t.Fatalf("ShrinkIdle(1h) retired %d slots ready for less than that", n)
	}
	if n := p.ShrinkIdle(time.Minute, time.Now().Add(2*time.Minute)); n != 2 {
		t.Fatalf("ShrinkIdle retired %d slots; want the 2 beyond the base size", n)
	}
	if st := p.Status(false); st.Size != 2 || st.States[pool.Retired] != 2 || st.Stats.ShrunkIdle != 2 {
		t.Fatalf("after shrinking: size %d, %d retired, shrunk %d; want 2, 2, 2", st.Size, st.States[pool.Retired], st.Stats.ShrunkIdle)
	}
	// Growing again starts a retired slot, not a new one.
	held = []*pool.Lease{lease(t, p), lease(t, p)}
	if n, err := p.Grow(3); err != nil || n != 1 {
		t.Fatalf("Grow(3) = %d, %v; want 1", n, err)
	}
	l := lease(t, p)
	if got := canary(t, open(t, l)); got != "pristine,pristine" {
		t.Fatalf("regrown slot %d: canary %q", l.Slot, got)
	}
	if st := p.Status(true); len(st.Slots) != 4 || st.Size != 3 {
		t.Fatalf("after growing again: %d slots known, size %d; want 4 and 3", len(st.Slots), st.Size)
	}
	if _, err := p.Grow(pool.MaxSlots + 1); err == nil {
		t.Fatal("Grow beyond MaxSlots was accepted")
	}
}

// waitReady waits until n slots are ready.
func waitReady(t *testing.T, p *pool.Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for p.Status(false).States[pool.Ready] < n {
		if time.Now().After(deadline) {
			t.Fatalf("slots not ready: %v", p.Status(false).States)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A pool restored after it grew (Options.Slots) comes up with every slot
// it had made; the ones beyond its size go once idle.
func TestUpWithGrownSlots(t *testing.T) {
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Slots: 3, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	if s := p.Status(false); s.Size != 3 || s.Base != 1 || s.States[pool.Ready] != 3 || p.Slots() != 3 {
		t.Fatalf("up with 3 slots of a pool of 1: size %d base %d states %v", s.Size, s.Base, s.States)
	}
	if n := p.ShrinkIdle(0, time.Now().Add(time.Second)); n != 2 {
		t.Fatalf("ShrinkIdle retired %d, want the 2 beyond the size", n)
	}
}
