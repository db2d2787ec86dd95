package pool

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestForkRefusals: Snapshot refuses a lease of a slot other holders
// share (its copy would hold their databases), an unknown lease and a
// released one, before it touches the slot.
func TestForkRefusals(t *testing.T) {
	ctx := context.Background()
	shared := fakePool(t, &fake{}, 2, Options{Size: 1}, nil)
	l := leaseOf(t, shared, LeaseOptions{})
	dst := filepath.Join(t.TempDir(), "fork")
	if err := shared.Snapshot(ctx, l.ID, dst); !errors.Is(err, ErrForkShared) {
		t.Errorf("fork of a shared slot's lease: %v, want ErrForkShared", err)
	}
	if err := shared.Snapshot(ctx, "nosuch", dst); !errors.Is(err, ErrUnknownLease) {
		t.Errorf("fork of an unknown lease: %v, want ErrUnknownLease", err)
	}
	one := fakePool(t, &fake{}, 1, Options{Size: 1}, nil)
	l = leaseOf(t, one, LeaseOptions{})
	release(t, one, l.ID, Dirty, true)
	if err := one.Snapshot(ctx, l.ID, dst); err == nil {
		t.Error("fork of a released lease: no error")
	}
}

// TestRunningThreads reads this process's own threads: none is stopped.
func TestRunningThreads(t *testing.T) {
	n, err := runningThreads("/proc/self/task")
	if err != nil || n < 1 {
		t.Errorf("runningThreads(/proc/self/task) = %d, %v; want at least 1", n, err)
	}
}
