package pool_test

// The attacker's tests of release --unchanged and of a slot's resources
// (docs/security.md, "Slot resources and release"): a holder that tries
// to keep a connection past its release, to leave a transaction for the
// next holder, to fill the host's disk or memory through its slot, and
// another local user that tries to lock a slot out.

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// pausingProxy forwards TCP connections to a server, passing the
// server's bytes at once and holding the client's until released: a
// client's handshake stops after the server's greeting, with the server
// waiting for its login.
type pausingProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	greeted int
	held    []chan struct{}
	conns   []net.Conn
	cond    *sync.Cond
}

func newPausingProxy(t *testing.T, port int) *pausingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pausingProxy{ln: ln, target: "127.0.0.1:" + strconv.Itoa(port)}
	p.cond = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *pausingProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *pausingProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		gate := make(chan struct{})
		p.mu.Lock()
		p.held = append(p.held, gate)
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() {
			// The greeting first, counted, then the rest.
			buf := make([]byte, 4096)
			n, err := s.Read(buf)
			if err != nil {
				c.Close()
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
			p.mu.Lock()
			p.greeted++
			p.cond.Broadcast()
			p.mu.Unlock()
			_, _ = io.Copy(c, s)
			c.Close()
		}()
		go func() {
			<-gate
			_, _ = io.Copy(s, c)
			s.Close()
		}()
	}
}

// waitGreeted waits until n connections have had the server's greeting.
func (p *pausingProxy) waitGreeted(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.greeted < n {
		p.cond.Wait()
	}
}

// release lets the held connections' logins through, one at a time,
// every gap.
func (p *pausingProxy) release(gap time.Duration) {
	p.mu.Lock()
	held := p.held
	p.held = nil
	p.mu.Unlock()
	for _, g := range held {
		close(g)
		time.Sleep(gap)
	}
}

func (p *pausingProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.held {
		close(g)
	}
	p.held = nil
	for _, c := range p.conns {
		c.Close()
	}
}

// adminOf opens root on a lease's slot socket with the root's admin
// secret, as pristine's own user may.
func adminOf(t *testing.T, st *template.Builder, l *pool.Lease) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn.Socket(l.Socket, "root", st.Catalog().Admin(), ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSecurityReleaseHandshakeRace is the review's race: the holder starts
// 40 logins whose handshakes a proxy holds after the server's greeting,
// releases its lease as unchanged and lets the logins through while the
// release runs. No connection of the old holder may survive the release:
// each one that logged in is dead before the next holder writes, and none
// reads the next holder's row. Twelve rounds, the logins 0.25 to 2 ms apart.
func TestSecurityReleaseHandshakeRace(t *testing.T) {
	_ = mysql.SetLogger(log.New(io.Discard, "", 0)) // 40 killed logins a round
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx := context.Background()
	gaps := []time.Duration{250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond}
	for round := 0; round < 12; round++ {
		a := lease(t, p)
		proxy := newPausingProxy(t, a.Port)
		const n = 40
		type login struct {
			conn *sql.Conn
			err  error
		}
		logins := make(chan login, n)
		for i := 0; i < n; i++ {
			go func() {
				db, err := sql.Open("mysql", dsn.TCP(proxy.port(), a.User, a.Password, a.Database))
				if err != nil {
					logins <- login{err: err}
					return
				}
				db.SetMaxOpenConns(1)
				cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				defer cancel()
				c, err := db.Conn(cctx)
				logins <- login{conn: c, err: err}
			}()
		}
		proxy.waitGreeted(n)
		type result struct {
			reset bool
			err   error
		}
		released := make(chan result, 1)
		paths := p.Status(false).Stats.ResetPaths
		go func() {
			reset, err := p.Release(ctx, a.ID, pool.Unchanged)
			released <- result{reset, err}
		}()
		// The logins arrive while the release runs (a few before it, most
		// during it, some after).
		proxy.release(gaps[round%len(gaps)])
		if r := <-released; r.err != nil || (r.reset && resetPath(t, p, paths) != pool.PathInPlace) {
			// A full reset kills the server: that proves nothing about the
			// kill. An in-place one does not: the release killed the
			// logins (its check comes after the kill) and the reset kills
			// again the same way. It happens when the previous round's
			// in-place reset had not settled (InnoDB's purge still moving
			// the log) when this round's lease was handed out.
			t.Fatalf("round %d: release --unchanged of a holder that wrote nothing: reset=%v err=%v, want the slot reused (or reset in place)", round, r.reset, r.err)
		}
		var in []*sql.Conn
		for i := 0; i < n; i++ {
			l := <-logins
			if l.err == nil {
				in = append(in, l.conn)
			}
		}
		b := lease(t, p)
		if _, err := open(t, b).Exec("INSERT INTO canary VALUES (99, 'next holder')"); err != nil {
			t.Fatal(err)
		}
		survived := 0
		for _, c := range in {
			var s string
			err := c.QueryRowContext(ctx, "SELECT COALESCE(GROUP_CONCAT(v), '') FROM canary WHERE id = 99").Scan(&s)
			if err == nil {
				survived++
				if s != "" {
					t.Errorf("round %d: the old holder read the next holder's row: %q", round, s)
				}
			}
			c.Close()
		}
		if survived > 0 {
			t.Fatalf("round %d: %d of the old holder's %d logins survived release --unchanged", round, survived, len(in))
		}
		t.Logf("round %d: %d of %d logins got in before the release locked them out; all were killed", round, len(in), n)
		if _, err := p.Release(ctx, b.ID, pool.Dirty); err != nil {
			t.Fatal(err)
		}
	}
}

// definerSchema adds to schema a procedure of the build account (an
// administrative definer) that sleeps: a lease calling it runs as that
// account, and the process list shows that account, not the lease.
// MySQL counts CALL as a write (release --unchanged would reset for it,
// proving nothing), so there the holder sleeps in a function instead.
const definerSchema = schema + `CREATE PROCEDURE nap() SQL SECURITY DEFINER DO SLEEP(600);
CREATE FUNCTION napf() RETURNS INT SQL SECURITY DEFINER NO SQL RETURN SLEEP(600);
`

// TestSecurityReleaseKillsDefinerSession: a holder's session inside a
// routine of another definer (the process list shows the definer as its
// user) is killed by release --unchanged like any other.
func TestSecurityReleaseKillsDefinerSession(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, st, "app", definerSchema, template.BuildOptions{})
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	ctx := context.Background()
	a := lease(t, p)
	admin := adminOf(t, st, a)
	call, sleeping := "CALL nap()", "INFO LIKE 'DO SLEEP%'"
	if st.Binary().Flavor == mariadb.MySQL {
		// In the sleep, not as the call starts: until the function's body
		// runs, the process list shows the caller.
		call, sleeping = "SELECT napf()", "(INFO LIKE 'SELECT napf()%' OR INFO LIKE 'RETURN SLEEP%') AND STATE = 'User sleep'"
	}
	called := make(chan error, 1)
	go func() {
		_, err := open(t, a).ExecContext(ctx, call)
		called <- err
	}()
	var user string
	for {
		err := admin.QueryRowContext(ctx, "SELECT USER FROM information_schema.PROCESSLIST WHERE "+sleeping).Scan(&user)
		if err == nil {
			break
		}
		if !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if user == a.User {
		t.Fatalf("the sleeping session shows the lease's user %s: the test proves nothing", user)
	}
	t.Logf("the holder's session inside nap() shows user %s", user)
	if reset, err := p.Release(ctx, a.ID, pool.Unchanged); err != nil || reset {
		t.Fatalf("release --unchanged: reset=%v err=%v, want the slot reused (a reset kills everything and proves nothing)", reset, err)
	}
	admin.Close()
	admin = adminOf(t, st, a) // the release killed the first one too
	var left int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE "+sleeping).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("the holder's session inside a definer's routine (user %s) survived release --unchanged", user)
	}
	if err := <-called; err == nil {
		t.Fatalf("%s returned without an error: its session was not killed", call)
	}
}

// TestSecurityReleaseXAPrepared: a read-only XA transaction prepared by
// the holder (it outlives its connection; nothing else would reset the
// slot) makes release --unchanged a reset, for that reason (the pool's log
// says so); the slot's XA RECOVER is empty after, and the next holder
// cannot commit the old holder's XID (on MySQL a lease may commit any
// prepared XID it names, though its own XA RECOVER is refused without
// XA_RECOVER_ADMIN: XAER_RMERR).
func TestSecurityReleaseXAPrepared(t *testing.T) {
	st, m := build(t, "auto", 1)
	var logs syncBuffer
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile(),
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	a := lease(t, p)
	ctx := context.Background()
	c, err := open(t, a).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"XA START 'left'", "SELECT COUNT(*) FROM canary", "XA END 'left'", "XA PREPARE 'left'"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.Close()
	reset, err := p.Release(ctx, a.ID, pool.Unchanged)
	if err != nil {
		t.Fatal(err)
	}
	if !reset {
		t.Error("a prepared XA transaction was handed to the next holder (release --unchanged reused the slot)")
	}
	if !strings.Contains(logs.String(), "XA transaction") {
		t.Errorf("the release did not reset for the XA transaction; the pool's log:\n%s", logs.String())
	}
	b := lease(t, p)
	rows, err := adminOf(t, st, b).Query("XA RECOVER")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Error("the next holder's slot holds the old holder's prepared transaction (XA RECOVER)")
	}
	if _, err := open(t, b).Exec("XA COMMIT 'left'"); err == nil {
		t.Error("the next holder committed the old holder's prepared XA transaction")
	}
}

// TestSecurityTempTableCap: a temporary MyISAM table (read_only does not
// stop it) grown by doubling is stopped near its slot's disk cap and
// cannot grow on after the freeze (it stays under 6 x the cap, where
// unchecked it reaches 8 x and more): its file lies in the slot's tmpdir,
// inside the clone, where the cap counts it.
func TestSecurityTempTableCap(t *testing.T) {
	for _, fs := range []string{"copy", "btrfs"} {
		t.Run(fs, func(t *testing.T) {
			var st *template.Builder
			if fs == "copy" {
				st = templatetest.NewBuilder(t, "copy")
			} else {
				st = templatetest.NewScratchBuilder(t, fs, 2<<30)
			}
			m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
			const capBytes = 100 << 20
			p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile(), SlotDisk: capBytes})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Down(context.Background())
			ctx := context.Background()
			hog := lease(t, p)
			db := open(t, hog)
			db.SetMaxOpenConns(1)
			var tmpdir string
			if err := db.QueryRow("SELECT @@tmpdir").Scan(&tmpdir); err != nil {
				t.Fatal(err)
			}
			clone := filepath.Join(pool.Dir(st.Catalog(), m), fmt.Sprintf("%03d", hog.Slot), "data")
			if !strings.HasPrefix(tmpdir, clone+"/") {
				t.Errorf("the slot's tmpdir %s is outside its clone %s", tmpdir, clone)
			}
			// The attacker doubles its table, and starts again (a new
			// table) whenever its connection is killed, 20 statements in
			// all; the biggest table it ever had is its score.
			var biggest int64
			var stopped error
			fresh := true
			for i := 0; i < 20; i++ {
				if fresh {
					for _, q := range []string{"DROP TEMPORARY TABLE IF EXISTS big", "CREATE TEMPORARY TABLE big (b LONGBLOB) ENGINE=MyISAM",
						"INSERT INTO big VALUES (REPEAT(SHA2(RAND(), 512), 8192))"} {
						if _, err := db.Exec(q); err != nil {
							stopped = err
						}
					}
					fresh = false
				}
				if _, err := db.Exec("INSERT INTO big SELECT * FROM big"); err != nil {
					if stopped == nil {
						stopped = err
					}
					var me *mysql.MySQLError
					if !errors.As(err, &me) {
						fresh = true // the connection was killed: its table is gone
					}
				}
				var size sql.NullInt64
				if err := db.QueryRow("SELECT SUM(LENGTH(b)) FROM big").Scan(&size); err != nil {
					fresh = true
					continue
				}
				biggest = max(biggest, size.Int64)
				if biggest > 8*capBytes {
					break
				}
			}
			t.Logf("the attacker's temporary table reached %d MiB (cap %d MiB); first stopped with: %v; over cap %d, sessions killed %d times", biggest>>20, capBytes>>20, stopped, p.Status(false).Stats.OverCap, p.Status(false).Stats.CapKills)
			if stopped == nil {
				t.Fatalf("a temporary table grew to %d MiB without being stopped", biggest>>20)
			}
			if biggest > 6*capBytes { // the watch may lag on a loaded machine: 6 x, not 1 x
				t.Fatalf("a temporary table reached %d MiB in a slot capped at %d MiB", biggest>>20, capBytes>>20)
			}
			if _, err := p.Release(ctx, hog.ID, pool.Dirty); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSecurityMemoryTableCap: a lease raises its session's
// max_heap_table_size to 4 GiB and doubles a MEMORY table: the slot's
// ceiling (pool up --slot-memory) stops it with "table is full" near the
// ceiling, and the session cannot raise max_session_mem_used either.
func TestSecurityMemoryTableCap(t *testing.T) {
	st, m := build(t, "auto", 1)
	const memCap = 64 << 20
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile(), SlotMemory: memCap})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	db := open(t, lease(t, p))
	db.SetMaxOpenConns(1)
	// max_session_mem_used is MariaDB's; MySQL has no such ceiling.
	mysqlServer := st.Binary().Flavor == mariadb.MySQL
	sessVar := "max_session_mem_used"
	if mysqlServer {
		sessVar = "max_heap_table_size"
	}
	for _, q := range []string{"SET SESSION max_heap_table_size = 4294967296", "SET SESSION " + sessVar + " = 1099511627776",
		"CREATE TABLE heap (b VARCHAR(4000)) ENGINE=MEMORY CHARSET=latin1", "INSERT INTO heap VALUES (REPEAT('x', 4000))"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var heapMax, sessMax int64
	if err := db.QueryRow("SELECT @@SESSION.max_heap_table_size, @@SESSION."+sessVar).Scan(&heapMax, &sessMax); err != nil {
		t.Fatal(err)
	}
	if heapMax > memCap || sessMax > memCap {
		t.Errorf("a lease raised its session's max_heap_table_size to %d and max_session_mem_used to %d past the slot's %d", heapMax, sessMax, memCap)
	}
	var full error
	var rows int64
	for i := 0; i < 20 && full == nil; i++ { // 2^20 rows of 4 kB: 4 GiB
		_, full = db.Exec("INSERT INTO heap SELECT * FROM heap")
		if err := db.QueryRow("SELECT COUNT(*) FROM heap").Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows*4000 > 8*memCap {
			break
		}
	}
	var me *mysql.MySQLError
	if !errors.As(full, &me) || me.Number != 1114 {
		t.Fatalf("a MEMORY table grew to %d MiB in a slot capped at %d MiB; last error %v, want 1114 (table is full)", rows*4000>>20, memCap>>20, full)
	}
	if rows*4000 > 2*memCap {
		t.Errorf("a MEMORY table took %d MiB in a slot capped at %d MiB", rows*4000>>20, memCap>>20)
	}
}

// TestSecurityConnectionReserve: another local user opens 80 idle TCP
// sockets to a slot (more than its max_connections) and a holder opens as
// many connections as its account may: pristine's admin still works (a
// release --unchanged runs, and clears the idle sockets), new admin
// connections still open, and the next holder connects. The idle sockets
// are dropped by the server after its connect_timeout.
func TestSecurityConnectionReserve(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: another local user is played by setpriv --reuid=65534")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux) to play another local user")
	}
	st, m := build(t, "auto", 1)
	var logs syncBuffer
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile(),
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	a := lease(t, p)
	ctx := context.Background()
	// The holder takes every connection its account may.
	var held []*sql.Conn
	hdb := open(t, a)
	var limitErr error
	for i := 0; i < 100; i++ {
		c, err := hdb.Conn(ctx)
		if err != nil {
			limitErr = err
			break
		}
		held = append(held, c)
	}
	var me *mysql.MySQLError
	if !errors.As(limitErr, &me) || me.Number != 1226 {
		t.Errorf("the holder opened %d connections and then got %v, want 1226 (max_user_connections)", len(held), limitErr)
	}
	// Two admin connections at once still open.
	admin := adminOf(t, st, a)
	var ac []*sql.Conn
	for i := 0; i < 2; i++ {
		c, err := admin.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			t.Fatalf("admin connection %d while the holder holds %d: %v", i+1, len(held), err)
		}
		ac = append(ac, c)
	}
	for _, c := range append(held, ac...) {
		c.Close()
	}
	// Another local user holds 80 idle sockets to the slot's port.
	script := `for i in $(seq 10 89); do eval "exec $i<>/dev/tcp/127.0.0.1/` + strconv.Itoa(a.Port) + `" || exit 1; done; echo open; read x`
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "bash", "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "open\n" {
		t.Fatalf("the flood as nobody: %q %v", line, err)
	}
	reset, err := p.Release(ctx, a.ID, pool.Unchanged)
	if err != nil || reset {
		t.Fatalf("release --unchanged under the flood: reset=%v err=%v, want the slot reused; log:\n%s", reset, err, logs.String())
	}
	b := lease(t, p)
	if err := open(t, b).Ping(); err != nil {
		t.Fatalf("the next holder cannot connect after the release: %v", err)
	}
	var timeout int
	if err := open(t, b).QueryRow("SELECT @@connect_timeout").Scan(&timeout); err != nil {
		t.Fatal(err)
	}
	if timeout > 2 {
		t.Errorf("connect_timeout is %d s: an idle socket holds a connection that long", timeout)
	}
}

// TestSecurityMemoryCgroup: a lease that fills many MEMORY tables, each
// under the slot's per-table ceiling, does not take more than its slot
// server's memory cgroup allows: the kernel stops that server alone (it
// is reported out_of_memory and reset), and the other slot goes on.
func TestSecurityMemoryCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: memory cgroups")
	}
	st, m := build(t, "auto", 1)
	const memCap = 32 << 20
	var logs syncBuffer
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 2, Profile: mariadb.DefaultProfile(), SlotMemory: memCap,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	capText := p.Status(false).MemoryCap
	t.Logf("memory cap: %s", capText)
	if !strings.Contains(capText, "cgroup") || strings.Contains(capText, "no limit") {
		t.Skipf("slot servers have no memory cgroup here: %s", capText)
	}
	hog, other := lease(t, p), lease(t, p)
	db := open(t, hog)
	db.SetMaxOpenConns(1)
	// 32 tables of up to 32 MiB: 1 GiB, four times the slot's limit.
	var stopped error
	for i := 0; i < 32 && stopped == nil; i++ {
		tbl := fmt.Sprintf("heap%d", i)
		if _, stopped = db.Exec("CREATE TABLE " + tbl + " (b VARCHAR(4000)) ENGINE=MEMORY CHARSET=latin1"); stopped != nil {
			break
		}
		if _, stopped = db.Exec("INSERT INTO " + tbl + " VALUES (REPEAT('x', 4000))"); stopped != nil {
			break
		}
		for j := 0; j < 14 && stopped == nil; j++ {
			_, stopped = db.Exec("INSERT INTO " + tbl + " SELECT * FROM " + tbl)
			var me *mysql.MySQLError
			if errors.As(stopped, &me) && me.Number == 1114 {
				stopped = nil // this table is full: on to the next
				break
			}
		}
	}
	if stopped == nil {
		t.Fatal("a lease filled 32 MEMORY tables (1 GiB) in a slot whose server is limited to far less")
	}
	t.Logf("the lease stopped with: %v", stopped)
	// The kernel killed the hog's server; the pool saw it die.
	for len(p.Status(false).Stats.SlotDeaths) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if deaths := p.Status(false).Stats.SlotDeaths; deaths[pool.ReasonOutOfMemory] != 1 {
		t.Errorf("slot deaths %v, want one %s", deaths, pool.ReasonOutOfMemory)
	}
	if !strings.Contains(logs.String(), "over its memory limit") {
		t.Errorf("the log does not say why the slot died:\n%s", logs.String())
	}
	if _, err := open(t, other).Exec("INSERT INTO canary VALUES (3, 'other slot')"); err != nil {
		t.Fatalf("the other slot stopped too: %v", err)
	}
}

// resetPath waits for the pool's next reset after the counts before and
// returns its path.
func resetPath(t *testing.T, p *pool.Pool, before map[string]int64) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for path, n := range p.Status(false).Stats.ResetPaths {
			if n > before[path] {
				return path
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no reset after a release that said it resets")
	return ""
}
