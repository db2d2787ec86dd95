// Package e2e runs the pristine binary as a user would: template build,
// pool up through a background daemon, lease, release, status, down, and a
// daemon killed with SIGKILL and started again.
package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/dsn"

	_ "github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// bin is the pristine binary the tests run; binTarget is the file it
// names when bin is a link to $PRISTINE_BIN (the daemon pool up starts is
// the program itself, so its argv[0] is that file).
var bin, binTarget string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pristine-e2e-bin-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "pristine")
	if b := os.Getenv("PRISTINE_BIN"); b != "" {
		// A binary built already (scripts/servers.sh: a root without Go),
		// under the name the tests' shell scripts call it by.
		if err := os.Symlink(b, bin); err != nil {
			panic(err)
		}
		if binTarget, err = filepath.EvalSymlinks(b); err != nil {
			panic(err)
		}
	} else if out, err := exec.Command("go", "build", "-o", bin, "github.com/pristinedb/pristine/cmd/pristine").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one root for one test, on /dev/shm.
type env struct {
	t    *testing.T
	root string
}

func newEnv(t *testing.T) *env {
	mariadbtest.Binary(t)
	dir, err := mariadbtest.TempDir("/dev/shm", "pristine-e2e-test-")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, root: filepath.Join(dir, "root")}
	t.Cleanup(func() {
		e.run("pool", "down", "--all") // ignore errors: nothing may be up
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(filepath.Join(e.root, "pristine.sock")); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if k := mariadb.KillOrphans(dir); len(k) > 0 {
			t.Errorf("servers left running: %v", k)
		}
		os.RemoveAll(dir)
	})
	return e
}

// run runs pristine with the env's root and returns stdout, stderr and the error.
func (e *env) run(args ...string) (string, string, error) {
	cmd := exec.Command(bin, append([]string{"--root", e.root}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// must runs pristine and fails the test on error.
func (e *env) must(args ...string) string {
	e.t.Helper()
	out, errOut, err := e.run(args...)
	if err != nil {
		e.t.Fatalf("pristine %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

type lease struct {
	ID, Host, Socket, User, Password, Database, DSN string
	Port, Slot                                      int
}

func (e *env) lease() lease {
	e.t.Helper()
	var l lease
	if err := json.Unmarshal([]byte(e.must("lease", "--json")), &l); err != nil {
		e.t.Fatal(err)
	}
	for _, f := range []string{l.ID, l.Host, l.Socket, l.User, l.Password, l.Database, l.DSN} {
		if f == "" {
			e.t.Fatalf("lease --json lacks a field: %+v", l)
		}
	}
	return l
}

func query(t *testing.T, dsn, q string) (string, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	err = db.QueryRow(q).Scan(&s)
	return s, err
}

const schema = "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO canary VALUES (1, 'pristine');\n"

func TestCLIFlow(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	if out := e.must("template", "ls"); !strings.Contains(out, "app") {
		t.Fatalf("template ls: %s", out)
	}
	e.must("pool", "up", "--template", "app", "--size", "2")
	l := e.lease()
	if v, err := query(t, l.DSN, "SELECT v FROM canary"); err != nil || v != "pristine" {
		t.Fatalf("leased database: %q %v", v, err)
	}
	// The shell form sets the variables a client reads.
	out := e.must("lease")
	if !strings.Contains(out, "export DATABASE_URL='mysql://") || !strings.Contains(out, "export MYSQL_PWD=") {
		t.Fatalf("lease output is not shell: %s", out)
	}
	var st []struct {
		Leased int `json:"leased"`
	}
	json.Unmarshal([]byte(e.must("pool", "status", "--json")), &st)
	if len(st) != 1 || st[0].Leased != 2 {
		t.Fatalf("pool status: %+v", st)
	}
	e.must("release", l.ID)
	// The release queues the slot's reset, which locks and drops the lease
	// account first, in the background: the credentials stop working
	// within it, not before the command returns.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := query(t, l.DSN, "SELECT 1"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a released lease's credentials still work 30 s after the release")
		}
	}
	_, errOut, err := e.run("release", l.ID)
	if err == nil || !strings.Contains(errOut, "unknown lease") {
		t.Fatalf("releasing twice: %v %s", err, errOut)
	}
	_, errOut, err = e.run("pool", "up", "--template", "nope", "--size", "1")
	if err == nil || !strings.Contains(errOut, "template not found") {
		t.Fatalf("pool up of an unknown template: %v %s", err, errOut)
	}
	e.must("pool", "down")
	// The daemon started by pool up exits with its last pool.
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(filepath.Join(e.root, "pristine.sock")); os.IsNotExist(err) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, _, err := e.run("pool", "status"); err == nil {
		t.Fatal("pool status answered after the last pool went down")
	}
}

func TestDaemonKilledKeepsLeases(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	e.must("pool", "up", "--template", "app", "--size", "2")
	l := e.lease()
	db, _ := sql.Open("mysql", l.DSN)
	if _, err := db.Exec("UPDATE canary SET v='mine'"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	pid := daemonPID(t, e.root)
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 200 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	// The next command starts a daemon, which brings the pool and the
	// lease back on the same port, with the holder's writes.
	var ls []lease
	if err := json.Unmarshal([]byte(e.must("lease", "ls", "--json")), &ls); err != nil || len(ls) != 1 || ls[0].ID != l.ID {
		t.Fatalf("after a restart the daemon lists %+v (%v), want lease %s", ls, err, l.ID)
	}
	if v, err := query(t, l.DSN, "SELECT v FROM canary"); err != nil || v != "mine" {
		t.Fatalf("the leased database after a restart: %q %v", v, err)
	}
	if newPID := daemonPID(t, e.root); newPID == pid {
		t.Fatal("the daemon was not restarted")
	}
	e.must("release", l.ID)
	e.lease()
}

// scratch puts the root's data on a scratch filesystem of kind fs (btrfs
// or xfs) in RAM, taken down when the test ends. Files on /dev/shm itself
// are no test of durability: MariaDB memory-maps its redo log there, so a
// killed server loses nothing whatever it was told. It skips without root.
func (e *env) scratch(fs, size string) {
	e.t.Helper()
	if os.Geteuid() != 0 {
		e.t.Skip("a scratch filesystem needs root")
	}
	e.must("scratch", "up", "--fs", fs, "--size", size)
	e.t.Cleanup(func() {
		e.run("pool", "down", "--all")
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(filepath.Join(e.root, "pristine.sock")); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		mariadb.KillOrphans(e.root)
		if _, errOut, err := e.run("scratch", "down"); err != nil {
			e.t.Errorf("scratch down: %v %s", err, errOut)
		}
	})
}

// killDaemon kills the daemon serving root with SIGKILL and waits until it
// and its servers are gone.
func (e *env) killDaemon() {
	e.t.Helper()
	pid := daemonPID(e.t, e.root)
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 500 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; i < 500 && len(mariadb.Servers(e.root)) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if left := mariadb.Servers(e.root); len(left) > 0 {
		e.t.Fatalf("servers %v outlived their daemon", left)
	}
}

// serveLog is the daemon's log, for a failure's message.
func (e *env) serveLog() string {
	b, _ := os.ReadFile(filepath.Join(e.root, "serve.log"))
	return string(b)
}

// showLease runs `lease show ID --json`: the lease, or the error text.
func (e *env) showLease(id string) (lease, string) {
	e.t.Helper()
	out, errOut, err := e.run("lease", "show", id, "--json")
	var l lease
	if err == nil {
		if jerr := json.Unmarshal([]byte(out), &l); jerr != nil {
			e.t.Fatalf("lease show %s: %v: %s", id, jerr, out)
		}
	}
	return l, errOut
}

// The daemon is killed (SIGKILL) twice, with a lease's slot broken in
// between: the journal and the daemon agree every time. The lease whose
// slot could not be restored is reported lost with its reason, and never
// comes back; the newer lease of the same slot keeps its committed rows,
// and its port is the one its server listens on, even when the old port
// was taken while the daemon was down.
func TestRestartSequence(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", e.serveLog())
		}
	})
	e.scratch("btrfs", "1G")
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	e.must("pool", "up", "--template", "app", "--size", "1")
	a := e.lease()
	if _, err := query(t, a.DSN, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	e.killDaemon()
	// Break A's slot: its clone no longer starts.
	sys, err := filepath.Glob(filepath.Join(e.root, "data", "pools", "*", "000", "data", "ibdata1"))
	if err != nil || len(sys) != 1 {
		t.Fatalf("slot 0's ibdata1: %v %v", sys, err)
	}
	if err := os.Truncate(sys[0], 0); err != nil {
		t.Fatal(err)
	}
	if _, msg := e.showLease(a.ID); !strings.Contains(msg, "lease "+a.ID+" was lost: slot 0 did not start again on its clone") {
		t.Fatalf("lease show of the lease whose slot broke: %q, want it reported lost with the reason", msg)
	}
	b := e.lease()
	if b.Slot != 0 || b.ID == a.ID {
		t.Fatalf("lease B: %+v, want a new lease on slot 0", b)
	}
	db, err := sql.Open("mysql", b.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Committed just before the kill: it must survive it.
	if _, err := db.Exec("UPDATE canary SET v='mine'"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	e.killDaemon()
	var ls []lease
	if err := json.Unmarshal([]byte(e.must("lease", "ls", "--json")), &ls); err != nil || len(ls) != 1 || ls[0].ID != b.ID {
		_, msg := e.showLease(b.ID)
		t.Fatalf("after the second restart the daemon lists %+v (%v), want only lease B %s (%s)", ls, err, b.ID, msg)
	}
	if _, msg := e.showLease(a.ID); !strings.Contains(msg, "was lost") {
		t.Fatalf("lease A after the second restart: %q, want lost", msg)
	}
	b2, msg := e.showLease(b.ID)
	if b2.Port != b.Port {
		t.Fatalf("lease B after a restart: port %d (%s), want %d", b2.Port, msg, b.Port)
	}
	if v, err := query(t, b2.DSN, "SELECT CONCAT(v, ' ', @@port) FROM canary"); err != nil || v != "mine "+strconv.Itoa(b.Port) {
		t.Fatalf("lease B after a restart: %q %v, want its committed row on port %d", v, err, b.Port)
	}

	// B's port is taken while the daemon is down: B comes back on another,
	// and says so.
	e.killDaemon()
	var squat net.Listener
	for i := 0; i < 500 && squat == nil; i++ {
		if squat, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(b.Port)); err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if squat == nil {
		t.Fatalf("take port %d: %v", b.Port, err)
	}
	defer squat.Close()
	b3, msg := e.showLease(b.ID)
	if b3.Port == 0 || b3.Port == b.Port {
		t.Fatalf("lease B with its port taken: port %d (%s), want a new one", b3.Port, msg)
	}
	if v, err := query(t, b3.DSN, "SELECT CONCAT(v, ' ', @@port) FROM canary"); err != nil || v != "mine "+strconv.Itoa(b3.Port) {
		t.Fatalf("lease B on its new port: %q %v", v, err)
	}
	if log := e.serveLog(); !strings.Contains(log, `msg="lease lost" template=app slot=0 lease=`+a.ID+` reason=restore_failed`) {
		t.Errorf("serve.log does not log lease A lost:\n%s", log)
	}
	// B's holder wrote before the restarts, so its database cannot be
	// handed on as unchanged: the next holder gets a pristine one.
	if _, errOut, err := e.run("release", b.ID, "--unchanged"); err != nil || !strings.Contains(errOut, "reset in the background") {
		t.Fatalf("release --unchanged of a restored lease: %v %s, want a reset", err, errOut)
	}
	c := e.lease()
	if v, err := query(t, c.DSN, "SELECT v FROM canary"); err != nil || v != "pristine" {
		t.Fatalf("the lease after a restored one: %q %v, want a pristine database", v, err)
	}
}

// daemonPID finds the daemon serving root.
func daemonPID(t *testing.T, root string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		args := strings.Split(string(b), "\x00")
		if len(args) > 3 && (args[0] == bin || args[0] == binTarget) && args[1] == "serve" && args[3] == root {
			return pid
		}
	}
	t.Fatal("no daemon running")
	return 0
}

func TestMissingServerAndBadRoot(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	cmd := exec.Command(bin, "--root", e.root, "template", "build", "app", "--from-sql", in)
	cmd.Env = append(os.Environ(), "PRISTINE_MARIADBD=/nonexistent/mariadbd")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PRISTINE_MARIADBD=/nonexistent/mariadbd") || strings.Count(strings.TrimSpace(string(out)), "\n") > 0 {
		t.Fatalf("a missing server: %v\n%s; want one line naming the cause and the fix", err, out)
	}
	// A directory pristine does not own is refused as a root.
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "precious.txt"), []byte("keep me"), 0o644)
	cmd = exec.Command(bin, "--root", foreign, "template", "ls")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), ".pristine-root") {
		t.Fatalf("a foreign root: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(foreign, "precious.txt")); string(b) != "keep me" {
		t.Fatal("a foreign root was touched")
	}
	// A broken dump names the file and line, and leaves no template.
	bad := filepath.Join(t.TempDir(), "bad.sql")
	os.WriteFile(bad, []byte("CREATE TABLE a (id INT PRIMARY KEY);\nINSERT INTO a VALUES (1);\nINSERT INTO a VALUES (1);\n"), 0o644)
	_, errOut, err := e.run("template", "build", "bad", "--from-sql", bad)
	if err == nil || !strings.Contains(errOut, "bad.sql:3") {
		t.Fatalf("a broken dump: %v %s", err, errOut)
	}
	if out := e.must("template", "ls", "--json"); strings.Contains(out, `"bad"`) {
		t.Fatalf("a failed build left a template: %s", out)
	}
}

func TestTemplateExportImport(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	a.must("template", "build", "app", "--from-sql", in)
	dir := t.TempDir()
	file := filepath.Join(dir, "app.prsa")
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--root", a.root, "template", "export", "app")
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &msg
	if err := cmd.Run(); err != nil {
		t.Fatalf("export: %v %s", err, msg.String())
	}
	out.Close()

	if out := b.must("template", "import", file); !strings.Contains(out, "imported") {
		t.Fatalf("import: %s", out)
	}
	if out := b.must("template", "import", file); !strings.Contains(out, "already here") {
		t.Fatalf("second import: %s", out)
	}
	b.must("pool", "up", "--template", "app", "--size", "1")
	l := b.lease()
	if v, err := query(t, l.DSN, "SELECT v FROM canary"); err != nil || v != "pristine" {
		t.Fatalf("a lease of the imported template: %q %v", v, err)
	}
	// The import re-keyed root: the exporting root's admin secret opens
	// nothing here, this root's does.
	for _, c := range []struct {
		root string
		want bool
	}{{a.root, false}, {b.root, true}} {
		secret, err := os.ReadFile(filepath.Join(c.root, "admin.secret"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = query(t, dsn.Socket(l.Socket, "root", strings.TrimSpace(string(secret)), ""), "SELECT 1")
		if (err == nil) != c.want {
			t.Errorf("root with the admin secret of %s: err %v, want success %v", c.root, err, c.want)
		}
	}
	b.must("pool", "down")

	// A damaged archive is refused, and leaves nothing behind.
	raw, _ := os.ReadFile(file)
	raw[len(raw)/2] ^= 0xff
	bad := filepath.Join(dir, "bad.prsa")
	os.WriteFile(bad, raw, 0o644)
	c := newEnv(t)
	_, errOut, err := c.run("template", "import", bad)
	if err == nil || !strings.Contains(errOut, "offset") {
		t.Fatalf("a damaged archive: %v %s", err, errOut)
	}
	// A template of another server version is refused, naming both.
	un := filepath.Join(dir, "unpacked")
	c.must("unpack", file, un)
	meta := filepath.Join(un, "meta.json")
	mb, _ := os.ReadFile(meta)
	os.WriteFile(meta, bytes.Replace(mb, []byte(`"server": "`), []byte(`"server": "9.9.9-Other-`), 1), 0o600)
	repacked := filepath.Join(dir, "other.prsa")
	f, _ := os.Create(repacked)
	cmd = exec.Command(bin, "pack", un)
	cmd.Stdout, cmd.Stderr = f, &msg
	if err := cmd.Run(); err != nil {
		t.Fatalf("pack: %v %s", err, msg.String())
	}
	f.Close()
	_, errOut, err = c.run("template", "import", repacked)
	if err == nil || !strings.Contains(errOut, "9.9.9-Other-") {
		t.Fatalf("a template of another server: %v %s", err, errOut)
	}
	if out := c.must("template", "ls", "--json"); strings.Contains(out, `"app"`) {
		t.Fatalf("a refused import left a template: %s", out)
	}
	ents, _ := os.ReadDir(filepath.Join(c.root, "data", "templates"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".import-") {
			t.Errorf("a refused import left %s", e.Name())
		}
	}
}

// TestDemoMainJob runs the README's main job, small: on a root that cannot
// reflink it makes its own scratch filesystem, and it leaves nothing mounted
// or running.
func TestDemoMainJob(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the demo on a tmpfs root mounts a scratch filesystem, which needs root")
	}
	e := newEnv(t)
	out := e.must("demo", "--slots", "3", "--scale", "0.05", "--scratch-size", "1G", "--json")
	var r struct {
		Slots       int     `json:"slots"`
		Backend     string  `json:"backend"`
		Built       bool    `json:"template_built"`
		PoolUp      float64 `json:"pool_up_seconds"`
		LeaseP99    float64 `json:"lease_p99_ms"`
		ResetP50    float64 `json:"reset_p50_ms"`
		RSS         float64 `json:"rss_mean_mb"`
		DumpLoad    float64 `json:"dumpload_one_copy_seconds"`
		RowsChecked int64   `json:"rows_checked"`
		PSS         float64 `json:"pss_mean_mb"`
		LoadBefore  string  `json:"load_before"`
		// Where and when, for a saved run (the README's sample).
		Started time.Time `json:"started"`
		Machine struct {
			CPU   string  `json:"cpu"`
			Cores int     `json:"cores"`
			Mem   float64 `json:"memory_gib"`
		} `json:"machine"`
		Pristine string `json:"pristine"`
		Runs     []struct {
			State      string  `json:"state"`
			PoolUp     float64 `json:"pool_up_seconds"`
			FirstLease float64 `json:"first_lease_seconds"`
			LoadBefore string  `json:"load_before"`
			LoadAfter  string  `json:"load_after"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, out)
	}
	// Three pool-ups by default, the first on the scratch filesystem the
	// demo made (cold), each with the load average around it.
	if len(r.Runs) != 3 || r.Runs[0].State != "cold" || r.Runs[1].State != "warm" || r.PSS <= 0 || r.LoadBefore == "" {
		t.Fatalf("demo reported no runs, states, PSS or load average: %+v", r)
	}
	if r.Started.IsZero() || time.Since(r.Started) > time.Hour || r.Machine.Cores != runtime.NumCPU() || r.Machine.Mem <= 0 || !strings.Contains(r.Pristine, "commit ") {
		t.Errorf("demo --json does not name its date, machine and pristine's version and commit: %+v", r)
	}
	for i, run := range r.Runs {
		// The first lease, asked for with the pool-up, comes with the
		// first slot, not after the last.
		if run.FirstLease <= 0 || run.FirstLease > run.PoolUp+1 {
			t.Errorf("demo run %d: first lease after %.3f s, pool up in %.3f s", i+1, run.FirstLease, run.PoolUp)
		}
		if run.PoolUp <= 0 || len(strings.Fields(run.LoadBefore)) != 3 || len(strings.Fields(run.LoadAfter)) != 3 {
			t.Errorf("demo run %d: %+v", i+1, run)
		}
	}
	if r.Slots != 3 || !r.Built || r.Backend == "" || r.PoolUp <= 0 || r.LeaseP99 <= 0 || r.ResetP50 <= 0 || r.RSS <= 0 || r.DumpLoad <= 0 || r.RowsChecked <= 0 {
		t.Fatalf("demo reported missing figures: %+v", r)
	}
	if k := mariadb.Servers(filepath.Dir(e.root)); len(k) > 0 {
		t.Errorf("the demo left servers running: %v", k)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), e.root) {
		t.Errorf("the demo left a filesystem mounted under %s", e.root)
	}
}
