package pool_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

const schema = `CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;
INSERT INTO canary VALUES (1, 'pristine'), (2, 'pristine');
CREATE TABLE child (id INT PRIMARY KEY, c INT, FOREIGN KEY (c) REFERENCES canary (id)) ENGINE=InnoDB;
INSERT INTO child VALUES (1, 1);
`

// build makes a store on the given backend in a new root and a template
// from schema with k databases per slot.
func build(t *testing.T, backend string, k int) (*template.Builder, *catalog.Meta) {
	t.Helper()
	st := templatetest.NewBuilder(t, backend)
	return st, templatetest.Build(t, st, "app", schema, template.BuildOptions{DBsPerSlot: k})
}

func open(t *testing.T, l *pool.Lease) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func canary(t *testing.T, db *sql.DB) string {
	t.Helper()
	var n int
	var s string
	if err := db.QueryRow("SELECT COUNT(*), GROUP_CONCAT(v ORDER BY id) FROM canary").Scan(&n, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func lease(t *testing.T, p *pool.Pool) *pool.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := p.Lease(ctx, pool.LeaseOptions{Holder: "test", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLeaseResetRelease(t *testing.T) {
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())

	a, b := lease(t, p), lease(t, p)
	if a.Slot == b.Slot || a.Port == b.Port {
		t.Fatalf("two leases share a slot: %+v %+v", a, b)
	}
	dbA := open(t, a)
	if got := canary(t, dbA); got != "pristine,pristine" {
		t.Fatalf("fresh slot canary = %q", got)
	}
	if _, err := dbA.Exec("UPDATE canary SET v='dirty'"); err != nil {
		t.Fatal(err)
	}
	// No slot is free: a lease waits, then fails with a clear error.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = p.Lease(ctx, pool.LeaseOptions{Holder: "test", TTL: time.Minute})
	cancel()
	if !errors.Is(err, pool.ErrLeaseTimeout) {
		t.Fatalf("lease from a full pool = %v, want ErrLeaseTimeout", err)
	}
	if _, err := p.Release(context.Background(), a.ID, pool.Dirty); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Release(context.Background(), a.ID, pool.Dirty); !errors.Is(err, pool.ErrUnknownLease) {
		t.Fatalf("second release = %v, want ErrUnknownLease", err)
	}
	c := lease(t, p) // waits for the reset of a's slot
	if c.Slot != a.Slot {
		t.Fatalf("lease after release got slot %d, want the reset slot %d", c.Slot, a.Slot)
	}
	if got := canary(t, open(t, c)); got != "pristine,pristine" {
		t.Fatalf("slot after reset is not pristine: canary = %q", got)
	}
	var fks int
	if err := open(t, c).QueryRow("SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA=DATABASE()").Scan(&fks); err != nil || fks != 1 {
		t.Fatalf("foreign keys in the clone = %d (%v), want 1", fks, err)
	}
	st2 := p.Status(true)
	if st2.Stats.Leases != 3 || st2.ResetP50MS <= 0 {
		t.Fatalf("status counters: %+v", st2.Stats)
	}
}

// syncBuffer is a bytes.Buffer for a logger written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A slot whose server is killed is logged with its reason, counted, and
// replaced; its lease is lost and its holder is told why.
func TestDeadSlotIsReplaced(t *testing.T) {
	st, m := build(t, "auto", 1)
	var logs syncBuffer
	var mu sync.Mutex
	var events []pool.Event
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile(),
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Event: func(ev pool.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	held := lease(t, p)
	s := p.Status(true).Slots[0]
	if err := syscall.Kill(s.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000 && p.Status(false).Stats.Replaced == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	l := lease(t, p) // waits until the replacement is ready
	if got := canary(t, open(t, l)); got != "pristine,pristine" {
		t.Fatalf("replaced slot canary = %q", got)
	}
	st2 := p.Status(true)
	if st2.Stats.Replaced != 1 || st2.Slots[0].PID == s.PID {
		t.Fatalf("slot not replaced: %+v", st2)
	}
	if st2.Stats.SlotDeaths[pool.ReasonKilled] != 1 || st2.Stats.LeasesLost[pool.ReasonKilled] != 1 {
		t.Fatalf("counters after a killed slot: deaths %v, lost %v; want 1 killed each", st2.Stats.SlotDeaths, st2.Stats.LeasesLost)
	}
	out := logs.String()
	for _, want := range []string{`msg="slot died" template=app slot=0 reason=killed`, `msg="lease lost" template=app slot=0 lease=` + held.ID + ` reason=killed`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
	mu.Lock()
	if len(events) != 2 || events[0].Kind != pool.EventSlotDied || events[1].Kind != pool.EventLeaseLost || events[1].Lease != held.ID {
		t.Errorf("events = %+v, want a slot death then the lost lease", events)
	}
	mu.Unlock()
	// Its holder is told the lease was lost and why, not "unknown".
	_, err = p.Release(context.Background(), held.ID, pool.Dirty)
	if !errors.Is(err, pool.ErrLeaseLost) || !strings.Contains(err.Error(), "killed (SIGKILL)") {
		t.Fatalf("release of the lost lease = %v, want ErrLeaseLost saying the server was killed", err)
	}
}

func TestDBsPerSlotLeases(t *testing.T) {
	st, m := build(t, "auto", 2)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	a, b := lease(t, p), lease(t, p)
	if a.Slot != b.Slot || a.Database == b.Database {
		t.Fatalf("want two databases of one slot: %+v %+v", a, b)
	}
	for _, l := range []*pool.Lease{a, b} {
		db := open(t, l)
		if got := canary(t, db); got != "pristine,pristine" {
			t.Fatalf("%s canary = %q", l.Database, got)
		}
		var fks int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA=DATABASE()").Scan(&fks); err != nil || fks != 1 {
			t.Fatalf("%s: foreign keys = %d (%v), want 1", l.Database, fks, err)
		}
	}
}

func TestDownLeavesNothing(t *testing.T) {
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 3, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, s := range p.Status(true).Slots {
		pids = append(pids, s.PID)
	}
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("server %d still running after Down", pid)
		}
	}
	if _, err := os.Stat(pool.Dir(st.Catalog(), m)); !os.IsNotExist(err) {
		t.Errorf("pool directory left after Down: %v", err)
	}
	if _, err := p.Lease(context.Background(), pool.LeaseOptions{}); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("lease after Down = %v, want ErrClosed", err)
	}
}

func TestPreflightRefusesWhatDoesNotFit(t *testing.T) {
	st, m := build(t, "auto", 1)
	prof := mariadb.DefaultProfile()
	prof.BufferPool = 64 << 30
	_, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 100, Profile: prof})
	if !errors.Is(err, pool.ErrNoRoom) {
		t.Fatalf("a pool needing 6 TB of memory: %v, want ErrNoRoom", err)
	}
}

// onBackends runs f on a store of each backend release --unchanged checks
// differently: plain copies on /dev/shm (the clone is walked) and a btrfs
// scratch (only what the subvolume's tree says changed is looked at).
func onBackends(t *testing.T, f func(t *testing.T, st *template.Builder, m *catalog.Meta)) {
	for _, kind := range []string{"copy", "btrfs"} {
		t.Run(kind, func(t *testing.T) {
			var st *template.Builder
			if kind == "btrfs" {
				st = templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
			} else {
				st = templatetest.NewBuilder(t, kind)
			}
			f(t, st, templatetest.Build(t, st, "app", schema, template.BuildOptions{}))
		})
	}
}

func TestReleaseUnchanged(t *testing.T) { onBackends(t, testReleaseUnchanged) }

func testReleaseUnchanged(t *testing.T, st *template.Builder, m *catalog.Meta) {
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx := context.Background()

	// Reads only, a temporary table and an internal one: reused at once.
	a := lease(t, p)
	db := open(t, a)
	if got := canary(t, db); got != "pristine,pristine" {
		t.Fatalf("canary = %q", got)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// MySQL counts CREATE TEMPORARY TABLE with CREATE TABLE (MariaDB
	// apart): there a temporary table makes the release a reset.
	if st.Binary().Flavor != mariadb.MySQL {
		if _, err := conn.ExecContext(ctx, "CREATE TEMPORARY TABLE tmp (x INT) ENGINE=MEMORY"); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT v, COUNT(*) FROM canary GROUP BY v ORDER BY 2) x").Scan(&n); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	reset, err := p.Release(ctx, a.ID, pool.Unchanged)
	if err != nil || reset {
		t.Fatalf("release of a read-only lease: reset=%v err=%v, want reuse", reset, err)
	}
	// The old holder's credentials stop working at release.
	if err := db.Ping(); err == nil {
		t.Fatal("the released lease's account still connects")
	}
	b := lease(t, p)
	if b.Password == a.Password || b.Slot != a.Slot {
		t.Fatalf("reused lease: slot %d (was %d), the password the same: %v", b.Slot, a.Slot, b.Password == a.Password)
	}
	// The mark the check left (the new password's moves in it) holds for
	// the next read-only holder, and the one after.
	for i := 0; i < 2; i++ {
		if got := canary(t, open(t, b)); got != "pristine,pristine" {
			t.Fatalf("canary = %q", got)
		}
		if reset, err = p.Release(ctx, b.ID, pool.Unchanged); err != nil || reset {
			t.Fatalf("release %d of a reused read-only lease: reset=%v err=%v, want reuse", i+2, reset, err)
		}
		b = lease(t, p)
	}
	// Global state outlives connections: lease accounts cannot change it.
	db = open(t, b)
	if _, err := db.Exec("SET GLOBAL max_connections = 7"); err == nil {
		t.Fatal("a lease account could SET GLOBAL")
	}
	// A write the holder calls "unchanged" is caught, and the slot reset.
	if _, err := db.Exec("INSERT INTO canary VALUES (3, 'sneaky')"); err != nil {
		t.Fatal(err)
	}
	reset, err = p.Release(ctx, b.ID, pool.Unchanged)
	if err != nil || !reset {
		t.Fatalf("release of a written lease as unchanged: reset=%v err=%v, want a reset", reset, err)
	}
	c := lease(t, p)
	if got := canary(t, open(t, c)); got != "pristine,pristine" {
		t.Fatalf("after a caught write the slot is not pristine: %q", got)
	}
	if st := p.Status(false); st.Stats.Reused != 3 {
		t.Fatalf("reused counter = %d, want 3", st.Stats.Reused)
	}
}

func TestKeepAndHolderExit(t *testing.T) {
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx := context.Background()

	// A lease whose holder process exits is reclaimed.
	holder := exec.Command("sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	l, err := p.Lease(ctx, pool.LeaseOptions{Holder: "proc", PID: holder.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	// A kept lease survives its TTL.
	k, err := p.Lease(ctx, pool.LeaseOptions{Holder: "debug", TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Keep(k.ID); err != nil {
		t.Fatal(err)
	}
	holder.Process.Kill()
	holder.Wait()
	for i := 0; i < 500 && p.Status(false).Stats.HolderGone == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := p.Get(l.ID); ok {
		t.Fatal("the lease of an exited holder was not reclaimed")
	}
	time.Sleep(time.Second)
	got, ok := p.Get(k.ID)
	if !ok || !got.Kept {
		t.Fatal("a kept lease was reclaimed")
	}
	if s := p.Status(true).Slots[k.Slot]; s.State != pool.Kept {
		t.Fatalf("kept slot state = %s", s.State)
	}
	if got := canary(t, open(t, k)); got != "pristine,pristine" {
		t.Fatalf("kept slot canary = %q", got)
	}
}

// A holder who writes files through the server (SELECT ... INTO DUMPFILE
// or OUTFILE), or has them written some other way, and then releases the
// database as unchanged, gets it reset: the next holder never sees them.
// The planted files are a CSV table's .frm, .CSV and .CSM, which a server
// opens as a table when asked for it (the adversarial review's attack).
func TestReleaseUnchangedCatchesFiles(t *testing.T) { onBackends(t, testReleaseUnchangedCatchesFiles) }

func testReleaseUnchangedCatchesFiles(t *testing.T, st *template.Builder, m *catalog.Meta) {
	if st.Binary().Flavor == mariadb.MySQL {
		// The attack needs a server that opens a table from files alone.
		t.Skip("MySQL keeps table definitions in its data dictionary (no .frm, no db.opt): planted files are not tables there; the file comparison is the same code and is tested on MariaDB")
	}
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx := context.Background()

	// The files of a CSV table, made on the other slot.
	x := lease(t, p)
	xdb := open(t, x)
	for _, q := range []string{"CREATE TABLE evil (msg VARCHAR(64) NOT NULL) ENGINE=CSV",
		"INSERT INTO evil VALUES ('row planted by an earlier holder')"} {
		if _, err := xdb.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var xdir string
	if err := xdb.QueryRow("SELECT @@datadir").Scan(&xdir); err != nil {
		t.Fatal(err)
	}
	planted := map[string][]byte{}
	for _, ext := range []string{".frm", ".CSV", ".CSM"} {
		b, err := os.ReadFile(filepath.Join(xdir, x.Database, "evil"+ext))
		if err != nil {
			t.Fatal(err)
		}
		planted[ext] = b
	}

	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, db *sql.DB, l *pool.Lease, datadir string)
	}{
		{"INTO DUMPFILE into the clone", func(t *testing.T, db *sql.DB, l *pool.Lease, datadir string) {
			for ext, b := range planted {
				_, err := db.Exec("SELECT UNHEX(?) INTO DUMPFILE '"+filepath.Join(datadir, l.Database, "evil"+ext)+"'", hex.EncodeToString(b))
				if err != nil && (strings.Contains(err.Error(), "Access denied") || strings.Contains(err.Error(), "secure-file-priv")) {
					t.Skipf("lease accounts cannot write files (%v); the next case writes them as the server would", err)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"files written into the clone", func(t *testing.T, db *sql.DB, l *pool.Lease, datadir string) {
			for ext, b := range planted {
				if err := os.WriteFile(filepath.Join(datadir, l.Database, "evil"+ext), b, 0o660); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"a file changed in the clone", func(t *testing.T, db *sql.DB, l *pool.Lease, datadir string) {
			opt := filepath.Join(datadir, l.Database, "db.opt")
			b, err := os.ReadFile(opt)
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(opt)
			if err := os.WriteFile(opt, append(b, '#'), 0o660); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(opt, fi.ModTime(), fi.ModTime()) // the change time still moves
		}},
		{"a file written into the run directory", func(t *testing.T, db *sql.DB, l *pool.Lease, datadir string) {
			if err := os.WriteFile(filepath.Join(filepath.Dir(l.Socket), "evil.txt"), []byte("planted"), 0o660); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := lease(t, p)
			defer p.Release(ctx, a.ID, pool.Dirty) // when the test stops early
			db := open(t, a)
			var datadir string
			if err := db.QueryRow("SELECT @@datadir").Scan(&datadir); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, db, a, datadir)
			db.Close()
			reset, err := p.Release(ctx, a.ID, pool.Unchanged)
			if err != nil || !reset {
				t.Fatalf("release as unchanged after planting files: reset=%v err=%v, want a reset", reset, err)
			}
			b := lease(t, p)
			defer p.Release(ctx, b.ID, pool.Dirty)
			if b.Slot != a.Slot {
				t.Fatalf("the next lease got slot %d, want %d", b.Slot, a.Slot)
			}
			var msg string
			err = open(t, b).QueryRow("SELECT msg FROM evil").Scan(&msg)
			if err == nil {
				t.Fatalf("the next holder reads %q from a table an earlier holder planted", msg)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(b.Socket), "evil.txt")); err == nil {
				t.Fatal("the next holder's run directory holds an earlier holder's file")
			}
		})
	}
}

// TestLeaseWhileComingUpReal: on real servers, a lease asked for after the
// pool is prepared and before any slot started waits for the start and is
// served by a slot that answered; Start returns at MinReady, the rest come
// up in the background.
func TestLeaseWhileComingUpReal(t *testing.T) {
	st, m := build(t, "auto", 1)
	p, err := pool.Prepare(st.Catalog(), st.Binary(), m, pool.Options{Size: 6, MinReady: 1, Parallel: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	if got := p.Status(false).States[pool.Starting]; got != 6 {
		t.Fatalf("a prepared pool has %d slots starting, want 6", got)
	}
	type result struct {
		l   *pool.Lease
		err error
	}
	leased := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l, err := p.Lease(ctx, pool.LeaseOptions{Holder: "test"})
		leased <- result{l, err}
	}()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := <-leased
	if r.err != nil {
		t.Fatalf("lease asked for before the start: %v", r.err)
	}
	l := r.l
	if got := canary(t, open(t, l)); got != "pristine,pristine" {
		t.Fatalf("the first slot's canary = %q", got)
	}
	// The start counts a slot just after the slot is Ready: the time the
	// whole pool took comes a moment after the last slot's state.
	ps := p.Status(false)
	for deadline := time.Now().Add(time.Minute); (ps.States[pool.Starting] > 0 || ps.Stats.UpSeconds <= 0) && time.Now().Before(deadline); ps = p.Status(false) {
		time.Sleep(20 * time.Millisecond)
	}
	if ps.States[pool.Ready] != 5 || ps.States[pool.Leased] != 1 || ps.Stats.UpSeconds <= 0 {
		t.Fatalf("after the background start: %v, up %.2fs; want 5 ready and 1 leased", ps.States, ps.Stats.UpSeconds)
	}
}

// TestDownDuringBackgroundStart: pool down while slots still start in the
// background leaves no server running and no clone.
func TestDownDuringBackgroundStart(t *testing.T) {
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 12, MinReady: 1, Parallel: 2, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Status(false).States[pool.Starting]; n == 0 {
		t.Logf("every slot was up before Down (a fast machine): Down is still checked")
	}
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if killed := mariadb.KillOrphans(st.Catalog().Root().Data()); len(killed) > 0 {
		t.Errorf("servers left running after Down during the start: %v", killed)
	}
	if _, err := os.Stat(pool.Dir(st.Catalog(), m)); !os.IsNotExist(err) {
		t.Errorf("pool directory left after Down during the start: %v", err)
	}
}
