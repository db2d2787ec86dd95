package pool

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// holdChecks makes every background check (ReleaseAsync) wait, once the
// release has answered, until the returned gate is closed or the check's
// context ends (Down); entered is told each check that waits.
func holdChecks(t *testing.T) (entered chan int, gate chan struct{}) {
	entered, gate = make(chan int, 4), make(chan struct{})
	checkHook = func(ctx context.Context, slot int) {
		entered <- slot
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	t.Cleanup(func() { checkHook = nil })
	return entered, gate
}

// A release as unchanged answers before its check: the slot is still
// being checked (not leasable) when ReleaseAsync returns, the old
// holder's connection survives until the check runs and not after it, and
// the next holder gets a clean database, reused when nothing was written
// and reset when something was.
func TestReleaseAsyncAnswersBeforeTheCheck(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, st, "app", "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);", template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name      string
		write     string
		wantReuse int64
	}{
		{"read only", "", 1},
		{"written", "INSERT INTO t VALUES (2)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, gate := holdChecks(t)
			l, err := p.Lease(ctx, LeaseOptions{Holder: "test"})
			if err != nil {
				t.Fatal(err)
			}
			db := openLease(t, l)
			db.SetMaxIdleConns(1)
			if _, err := db.ExecContext(ctx, "SELECT COUNT(*) FROM t"); err != nil {
				t.Fatal(err)
			}
			if tc.write != "" {
				if _, err := db.ExecContext(ctx, tc.write); err != nil {
					t.Fatal(err)
				}
			}
			reused := p.Status(false).Stats.Reused
			if checking, err := p.ReleaseAsync(l.ID, Unchanged); err != nil || !checking {
				t.Fatalf("release: checking=%v err=%v, want the check in the background", checking, err)
			}
			<-entered
			p.mu.Lock()
			checkingNow := p.slots[0].units[0].checking
			p.mu.Unlock()
			if !checkingNow {
				t.Fatal("the release answered, but the slot is not being checked")
			}
			short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
			got, err := p.Lease(short, LeaseOptions{Holder: "early"})
			stop()
			if !errors.Is(err, ErrLeaseTimeout) {
				t.Fatalf("a lease while the slot is checked: %v (lease %v), want a timeout: the slot was handed out before its check", err, got != nil)
			}
			close(gate)
			next, err := p.Lease(ctx, LeaseOptions{Holder: "next"})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release(ctx, next.ID, Dirty)
			if err := db.PingContext(ctx); err == nil {
				t.Error("the old holder's connection survived its release")
			}
			var n int
			if err := openLease(t, next).QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
				t.Errorf("the next holder counts %d rows (%v), want the template's 1", n, err)
			}
			if d := p.Status(false).Stats.Reused - reused; d != tc.wantReuse {
				t.Errorf("reused %d times, want %d", d, tc.wantReuse)
			}
		})
	}
}

// A pool brought down while a background check runs (the daemon's stop)
// cancels the check and goes cleanly: the slot's server is gone, and so
// is its clone. (A daemon killed instead has the lease out of its journal
// already, and a restarted daemon clones that slot afresh: see
// TestDaemonKilledDuringInPlaceReset for that path.)
func TestReleaseAsyncDownDuringCheck(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, st, "app", "CREATE TABLE t (id INT PRIMARY KEY);", template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	entered, _ := holdChecks(t)
	l, err := p.Lease(context.Background(), LeaseOptions{Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	pid := p.slots[0].srv.PID()
	p.mu.Unlock()
	if _, err := p.ReleaseAsync(l.ID, Unchanged); err != nil {
		t.Fatal(err)
	}
	<-entered
	down := make(chan error, 1)
	go func() { down <- p.Down(context.Background()) }()
	select {
	case err := <-down:
		if err != nil {
			t.Fatalf("pool down during a background check: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("pool down waited for ever on a background check")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the checked slot's server (pid %d) outlived the pool", pid)
	}
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Errorf("the pool's clones are still at %s (%v)", p.dir, err)
	}
	if _, err := p.Release(context.Background(), l.ID, Unchanged); err == nil {
		t.Error("the lease released during the down can be released again")
	}
}
