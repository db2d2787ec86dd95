package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lease on a slot the pool grew survives a daemon killed and restarted:
// the grown slots come back with it.
func TestGrownSlotSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	e.must("pool", "up", "--template", "app", "--size", "1")
	a := e.lease()
	if out := e.must("pool", "up", "--template", "app", "--size", "2"); !strings.Contains(out, "grown to 2 slots") {
		t.Fatalf("pool up of 2 on a pool of 1 said %q, want it grown", out)
	}
	b := e.lease()
	if b.Slot != 1 || a.Slot != 0 {
		t.Fatalf("leases on slots %d and %d, want 0 and the grown 1", a.Slot, b.Slot)
	}
	e.killDaemon()
	b2, msg := e.showLease(b.ID)
	if b2.ID != b.ID || b2.Slot != 1 {
		t.Fatalf("the lease on the grown slot after a restart: %+v (%s), want it back", b2, msg)
	}
	if v, err := query(t, b2.DSN, "SELECT v FROM canary WHERE id=1"); err != nil || v == "" {
		t.Fatalf("the grown slot's lease after a restart: %q %v", v, err)
	}
}
