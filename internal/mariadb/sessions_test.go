package mariadb_test

import (
	"context"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// KillOthers ends every client connection, one in the middle of a
// statement too, and leaves the server's own threads (the event
// scheduler) alone, on either flavour.
func TestKillOthers(t *testing.T) {
	in := mariadbtest.Start(t)
	db := mariadbtest.Open(t, in, "")
	mariadbtest.Exec(t, db, "SET GLOBAL event_scheduler = ON")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	victims := make([]chan error, 2)
	for i := range victims {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		victims[i] = make(chan error, 1)
		if i == 0 {
			go func(done chan error) { _, err := c.ExecContext(ctx, "SELECT SLEEP(20)"); done <- err }(victims[i])
		} else if err := c.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	me, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer me.Close()
	var daemons int
	waitDaemon := func() {
		for i := 0; i < 200; i++ {
			if err := me.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Daemon'").Scan(&daemons); err != nil {
				t.Fatal(err)
			}
			if daemons > 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("the event scheduler never showed in the process list")
	}
	waitDaemon()
	time.Sleep(50 * time.Millisecond) // the SLEEP is running
	start := time.Now()
	if err := mariadb.KillOthers(ctx, me, 400); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("KillOthers took %v", d)
	}
	// information_schema's list, not SHOW PROCESSLIST that KillOthers reads.
	var left int
	if err := me.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND <> 'Daemon' AND NOT (USER = 'system user' AND HOST = '')").Scan(&left); err != nil || left != 0 {
		t.Errorf("client connections left: %d (%v)", left, err)
	}
	select {
	case <-victims[0]:
	case <-time.After(5 * time.Second):
		t.Error("the running statement's connection did not end")
	}
	waitDaemon()
}

// A slot gets its flavour's per-table counters unless the user's own
// server options turn the facility on or off.
func TestInPlaceArgs(t *testing.T) {
	for _, tc := range []struct {
		f    mariadb.Flavor
		user []string
		want string // the first option, "" for none
	}{
		{mariadb.MariaDB, nil, "--loose-userstat=1"},
		{mariadb.MariaDB, []string{"userstat=0"}, ""},
		{mariadb.MariaDB, []string{"loose_userstat=OFF"}, ""},
		{mariadb.MySQL, nil, "--performance-schema=ON"},
		{mariadb.MySQL, []string{"performance_schema=ON"}, ""},
		{mariadb.MySQL, []string{"skip-performance-schema"}, ""},
		{mariadb.MySQL, []string{"performance-schema-max-table-handles=64"}, "--performance-schema=ON"},
	} {
		got := tc.f.InPlaceArgs(tc.user)
		first := ""
		if len(got) > 0 {
			first = got[0]
		}
		if first != tc.want {
			t.Errorf("%s with %q: first option %q, want %q", tc.f, tc.user, first, tc.want)
		}
	}
}
