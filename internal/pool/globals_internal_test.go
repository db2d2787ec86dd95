package pool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// A global variable changed while a database was leased (by any path: a
// definer's procedure, a grant a lease should not have had; here the admin
// connection) makes its release as unchanged a reset. Both slots of the
// pool are checked: the second's baseline hash is the first's
// (poolGlobals), so its release as unchanged after a session's SET (which
// makes the check read the hash again) fails if the two servers'
// variables hash differently.
func TestReleaseUnchangedCatchesGlobals(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	// A SET inside a routine counts as a SET too (the check hashes the
	// global variables again only when the SET count moved).
	m := templatetest.Build(t, st, "app", "CREATE TABLE t (id INT PRIMARY KEY);\nCREATE PROCEDURE setg() SQL SECURITY INVOKER SET GLOBAL max_connections = 9;", template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name      string
		set       string
		wantReset bool
	}{
		{"nothing changed", "", false},
		// Drivers run SETs of their session at every connect: the hash
		// is read again, and must still be the baseline's.
		{"a session's SET", "SET SESSION sql_mode = 'ANSI'", false},
		{"SET GLOBAL", "SET GLOBAL max_connections = 7", true},
		{"nothing changed after a reset", "", false},
		{"SET GLOBAL in a routine", "CALL `DB`.setg()", true},
		{"nothing changed at last", "", false},
	} {
		var leases []*Lease
		for range 2 {
			l, err := p.Lease(ctx, LeaseOptions{Holder: "test"})
			if err != nil {
				t.Fatal(err)
			}
			leases = append(leases, l)
		}
		for _, l := range leases {
			if tc.set != "" {
				p.mu.Lock()
				admin := p.slots[l.Slot].srv.(*liveServer).admin
				p.mu.Unlock()
				if _, err := admin.ExecContext(ctx, strings.ReplaceAll(tc.set, "DB", l.Database)); err != nil {
					t.Fatal(err)
				}
			}
			reset, err := p.Release(ctx, l.ID, Unchanged)
			if err != nil || reset != tc.wantReset {
				t.Errorf("%s, slot %d: release as unchanged: reset=%v err=%v, want reset=%v", tc.name, l.Slot, reset, err, tc.wantReset)
			}
		}
	}
}
