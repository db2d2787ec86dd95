package pool

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// heldReset brings up a pool of one slot with opt, leases it, writes a
// row and releases it, and holds its in-place reset in the middle
// (inplaceHook) until the test ends: the slot stays Resetting, so the
// next lease request has to wait.
func heldReset(t *testing.T, opt Options) *Pool {
	t.Helper()
	opt.Size, opt.Profile = 1, mariadb.DefaultProfile()
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	m := templatetest.Build(t, st, "app", inplaceSchemaFor(st.Binary().Flavor), template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, opt)
	if err != nil {
		t.Fatal(err)
	}
	held, release := make(chan int, 1), make(chan struct{})
	inplaceHook = func(slot int) {
		held <- slot
		<-release
	}
	// Cleanups run last first: the reset goes on before the pool goes down.
	t.Cleanup(func() { p.Down(context.Background()) })
	t.Cleanup(func() { close(release); inplaceHook = nil })

	l := leaseIn(t, p)
	if _, err := openLease(t, l).Exec("INSERT INTO app.aria_t (v) VALUES ('w')"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
		t.Fatal(err)
	}
	if got := <-held; got != 0 {
		t.Fatalf("held the reset of slot %d; want 0", got)
	}
	return p
}

// noGrowth asks for a lease that cannot wait and checks the pool did not
// start growing for it.
func noGrowth(t *testing.T, p *Pool, live int, grown int64, why string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Lease(ctx, LeaseOptions{Holder: "spares-test"}); !errors.Is(err, ErrLeaseTimeout) {
		t.Fatalf("%s: a lease with every slot busy = %v; want %v", why, err, ErrLeaseTimeout)
	}
	p.mu.Lock()
	growing := p.spares.growing
	p.mu.Unlock()
	st := p.Status(false)
	if growing || st.Size != live || st.States[Starting] != 0 || st.Stats.GrownForWaits != grown {
		t.Fatalf("%s: the pool grows (growing %v, size %d, %d starting, grown for waits %d); want %d slots and %d grown for waits",
			why, growing, st.Size, st.States[Starting], st.Stats.GrownForWaits, live, grown)
	}
}

// A lease request waiting behind a reset makes the pool grow by one
// slot, which the waiter gets; at the ceiling (Spares slots beyond the
// size) it does not grow again, with Spares 0 it never does, and a
// growth the budget refuses starts nothing.
func TestSparesGrowForWaits(t *testing.T) {
	t.Run("on", func(t *testing.T) {
		p := heldReset(t, Options{Spares: 1})
		l := leaseIn(t, p) // waits: slot 0 is held in its reset
		if l.Slot != 1 {
			t.Fatalf("the waiter got slot %d; want the new slot 1", l.Slot)
		}
		if got := canaryOf(t, openLease(t, l)); got != 3 {
			t.Fatalf("the grown slot has %d parent rows; want the template's 3", got)
		}
		st := p.Status(false)
		if st.Size != 2 || st.Stats.GrownForWaits != 1 || st.Stats.Grown != 1 {
			t.Fatalf("after a wait: size %d, grown %d, grown for waits %d; want 2, 1, 1", st.Size, st.Stats.Grown, st.Stats.GrownForWaits)
		}
		// Slot 0 still resetting, slot 1 leased: at the ceiling of 1+1.
		noGrowth(t, p, 2, 1, "at the ceiling")
	})
	t.Run("off", func(t *testing.T) {
		p := heldReset(t, Options{})
		noGrowth(t, p, 1, 0, "spares off")
	})
	t.Run("over budget", func(t *testing.T) {
		asked := make(chan int, 1)
		p := heldReset(t, Options{Spares: 1, GrowForWait: func(p *Pool, want int) error {
			asked <- want
			return errors.New("over the daemon's memory budget")
		}})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := p.Lease(ctx, LeaseOptions{Holder: "spares-test"}); !errors.Is(err, ErrLeaseTimeout) {
			t.Fatalf("a lease with every slot busy = %v; want %v", err, ErrLeaseTimeout)
		}
		if want := <-asked; want != 2 {
			t.Fatalf("the budget was asked for %d slots; want 2", want)
		}
		if st := p.Status(false); st.Size != 1 || st.States[Starting] != 0 || st.Stats.GrownForWaits != 0 {
			t.Fatalf("refused by the budget: size %d, %d starting, grown for waits %d; want 1, 0, 0", st.Size, st.States[Starting], st.Stats.GrownForWaits)
		}
	})
}

// canaryOf counts the template's parent rows a lease sees.
func canaryOf(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM app.parent").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
