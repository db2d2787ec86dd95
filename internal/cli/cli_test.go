package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/rootdir"
)

// result is what one in-process run of pristine gave: its exit code and
// what it wrote.
type result struct {
	code     int
	out, err string
}

// pristine runs the command line in-process on root with stdin in, the way
// the binary does (same command tree, same exit-code table), and returns
// what it wrote. No daemon is ever spawned: startDaemon refuses.
func pristine(t *testing.T, root, in string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := NewRoot(Stdio{In: strings.NewReader(in), Out: &out, Err: &errb})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := ExecuteContext(ctx, cmd, append([]string{"--root", root}, args...))
	return result{code, out.String(), errb.String()}
}

// noSpawn makes every command that would start a daemon fail instead, and
// clears the environment a user's shell may have set.
func noSpawn(t *testing.T) {
	t.Helper()
	prev := startDaemon
	startDaemon = func(*rootdir.Root, *Globals) error { return errors.New("test: no daemon may be started") }
	t.Cleanup(func() { startDaemon = prev })
	t.Setenv("PRISTINE_LEASE", "")
	t.Setenv("PRISTINE_ROOT", "")
}

// TestCommandsBadInputAndNoDaemon runs every command with input it must
// refuse (exit 2, ExitBadInput, naming what is wrong), and every command
// that needs a daemon on a root where none runs (exit 3, ExitNoDaemon). No
// server starts: the checks come before any.
func TestCommandsBadInputAndNoDaemon(t *testing.T) {
	noSpawn(t)
	root := filepath.Join(t.TempDir(), "root")
	sqlFile := filepath.Join(t.TempDir(), "schema.sql")
	if err := os.WriteFile(sqlFile, []byte("CREATE TABLE t (id INT PRIMARY KEY);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		// The command tree itself.
		{[]string{"nosuch"}, ExitBadInput, `unknown command "nosuch"`},
		{[]string{"template", "ls", "--nosuch"}, ExitBadInput, "unknown flag: --nosuch"},
		{[]string{"pool", "up", "--size", "many"}, ExitBadInput, `invalid argument "many"`},
		{[]string{"lease", "--wait"}, ExitBadInput, "flag needs an argument"},
		// demo, demo-sql
		{[]string{"demo", "extra"}, ExitBadInput, `unknown command "extra"`},
		{[]string{"demo", "--slots", "x"}, ExitBadInput, "invalid argument"},
		{[]string{"demo-sql", "--scale", "0"}, ExitBadInput, "--scale must be positive"},
		{[]string{"demo-sql", "--tables", "0"}, ExitBadInput, "--tables at least 1"},
		// scratch
		{[]string{"scratch", "up", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"scratch", "up", "--size", "lots"}, ExitBadInput, "lots"},
		{[]string{"scratch", "down", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"scratch", "status", "extra"}, ExitBadInput, "unknown command"},
		// template
		{[]string{"template", "build"}, ExitBadInput, "accepts 1 arg(s), received 0"},
		{[]string{"template", "ls", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"template", "rm"}, ExitBadInput, "requires at least 1 arg(s)"},
		{[]string{"template", "gc", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"template", "export"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"template", "import"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"template", "push", "app"}, ExitBadInput, "accepts 2 arg(s)"},
		{[]string{"template", "pull"}, ExitBadInput, "accepts between 1 and 2 arg(s)"},
		{[]string{"template", "key"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"template", "key", "app"}, ExitBadInput, "nothing to key"},
		{[]string{"template", "key", "app", "--from-sql", "-"}, ExitBadInput, "cannot read standard input"},
		{[]string{"template", "key", "app", "--from-sql", sqlFile, "--server-option", "plugin_load_add=evil.so"}, ExitBadInput, `server option "plugin_load_add=evil.so": a template carries data settings only`},
		{[]string{"template", "build", "app", "--from-sql", sqlFile, "--server-option", "LOOSE-REQUIRE-SECURE-TRANSPORT=OFF"}, ExitBadInput, `"LOOSE-REQUIRE-SECURE-TRANSPORT=OFF"`},
		{[]string{"--ram-budget", "lots", "template", "ls"}, ExitBadInput, "--ram-budget"},
		// pool
		{[]string{"pool", "up", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"pool", "up", "--template", "app", "--slot-disk", "lots"}, ExitBadInput, "lots"},
		{[]string{"pool", "up", "--template", "app", "--slot-memory", "lots"}, ExitBadInput, "lots"},
		{[]string{"pool", "up", "--template", "app", "--buffer-pool", "lots"}, ExitBadInput, "lots"},
		{[]string{"pool", "status", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"pool", "down", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"pool", "status"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"pool", "down", "--all"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"pool", "up", "--template", "app"}, ExitFailed, "test: no daemon may be started"},
		// lease, release, sql, dashboard
		{[]string{"lease", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"lease", "keep"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"lease", "extend", "a", "b"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"lease", "show"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"lease", "ls", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"lease", "fork"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"lease", "fork", "abc"}, ExitBadInput, "--as NAME is required"},
		{[]string{"lease", "fork", "abc", "--as", "seeded"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"release"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"sql", "a", "b"}, ExitBadInput, "takes one LEASE"},
		{[]string{"dashboard", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"lease"}, ExitNoDaemon, "start one with `pristine pool up`"},
		{[]string{"lease", "--template", "app"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"lease", "keep", "abc"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"lease", "extend", "abc"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"lease", "show", "abc"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"lease", "ls"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"release", "abc"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"sql"}, ExitNoDaemon, "no pristine daemon is running"},
		{[]string{"dashboard"}, ExitNoDaemon, "no pristine daemon is running"},
		// pack, unpack, verify, serve
		{[]string{"pack"}, ExitBadInput, "accepts 1 arg(s)"},
		{[]string{"unpack", "a"}, ExitBadInput, "accepts 2 arg(s)"},
		{[]string{"unpack", "--verify", "maybe", "a", "b"}, ExitBadInput, "--verify must be auto, all or headers"},
		{[]string{"unpack", "--format", "zip", sqlFile, filepath.Join(t.TempDir(), "out")}, ExitBadInput, `unknown archive format "zip"`},
		{[]string{"verify", "a"}, ExitBadInput, "accepts 2 arg(s)"},
		{[]string{"verify", "--schema-map", "nonsense", "a", "b"}, ExitBadInput, "nonsense"},
		{[]string{"serve", "extra"}, ExitBadInput, "unknown command"},
		{[]string{"serve", "--max-waiters", "x"}, ExitBadInput, "invalid argument"},
		// The benchmarks' old names say where they went.
		{[]string{"bench", "--workload", "demo"}, ExitBadInput, "run `pristine-bench bench --root " + root + " --workload demo`"},
		{[]string{"soak", "--clients", "2"}, ExitBadInput, "run `pristine-bench soak --root " + root + " --clients 2`"},
		{[]string{"bench-fleet"}, ExitBadInput, "run `pristine-bench bench-fleet --root " + root + "`"},
		{[]string{"bench-archive", "--runs", "1"}, ExitBadInput, "run `pristine-bench bench-archive --root " + root + " --runs 1`"},
		{[]string{"bench-capture"}, ExitBadInput, "run `pristine-bench bench-capture --root " + root + "`"},
		{[]string{"bench", "--first-build"}, ExitBadInput, "run `pristine-bench bench --root " + root + " --first-build`"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := pristine(t, root, "", c.args...)
			if r.code != c.code || !strings.Contains(r.err, c.want) {
				t.Errorf("pristine %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), r.code, r.err, c.code, c.want)
			}
			if r.code != 0 && !strings.HasPrefix(r.err, "pristine: ") {
				t.Errorf("pristine %s: stderr %q does not start with \"pristine: \"", strings.Join(c.args, " "), r.err)
			}
		})
	}
}

// TestCommandsThatNeedNoDaemon runs the commands that work on the root or
// on files alone, for real, and checks what they print.
func TestCommandsThatNeedNoDaemon(t *testing.T) {
	noSpawn(t)
	root := filepath.Join(t.TempDir(), "root")
	dir := t.TempDir()

	t.Run("help lists the exit codes and no benchmark", func(t *testing.T) {
		r := pristine(t, root, "", "--help")
		if r.code != 0 || !strings.Contains(r.out, "Exit codes:") || !strings.Contains(r.out, "4    no free database in time") {
			t.Fatalf("--help: exit %d, stdout %q", r.code, r.out)
		}
		for _, name := range movedToBench {
			if regexp.MustCompile(`(?m)^  ` + name + ` `).MatchString(r.out) {
				t.Errorf("--help lists %s, which moved to pristine-bench", name)
			}
		}
	})
	t.Run("demo-sql", func(t *testing.T) {
		r := pristine(t, root, "", "demo-sql", "--scale", "0.01", "--tables", "2")
		if r.code != 0 || strings.Count(r.out, "CREATE TABLE") != 2 || r.err != "" {
			t.Fatalf("demo-sql: exit %d, %d CREATE TABLEs, stderr %q", r.code, strings.Count(r.out, "CREATE TABLE"), r.err)
		}
	})
	t.Run("scratch status", func(t *testing.T) {
		r := pristine(t, root, "", "scratch", "status")
		if r.code != 0 || !strings.Contains(r.out, "scratch: not up") {
			t.Fatalf("scratch status: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
		}
		r = pristine(t, root, "", "--json", "scratch", "status")
		if r.code != 0 || !strings.HasPrefix(r.out, "{") {
			t.Fatalf("--json scratch status: exit %d, stdout %q", r.code, r.out)
		}
	})
	t.Run("template ls on an empty root", func(t *testing.T) {
		r := pristine(t, root, "", "--json", "template", "ls")
		if r.code == ExitFailed && strings.Contains(r.err, "mariadbd") {
			t.Skipf("no server binary: %s", r.err)
		}
		if r.code != 0 || strings.TrimSpace(r.out) != "null" && strings.TrimSpace(r.out) != "[]" {
			t.Fatalf("template ls: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
		}
		if r := pristine(t, root, "", "template", "rm", "nosuch"); r.code != ExitFailed || !strings.Contains(r.err, "nosuch") {
			t.Fatalf("template rm nosuch: exit %d, stderr %q", r.code, r.err)
		}
		if r := pristine(t, root, "", "pool", "up"); r.code != ExitBadInput || !strings.Contains(r.err, "no template on") {
			t.Fatalf("pool up with no template: exit %d, stderr %q", r.code, r.err)
		}
	})
	t.Run("template key", func(t *testing.T) {
		sqlFile := filepath.Join(dir, "schema.sql")
		if err := os.WriteFile(sqlFile, []byte("CREATE TABLE t (id INT PRIMARY KEY);\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		key := func(extra ...string) string {
			r := pristine(t, root, "", append([]string{"template", "key", "app", "--from-sql", sqlFile}, extra...)...)
			if r.code == ExitFailed && strings.Contains(r.err, "mariadbd") {
				t.Skipf("no server binary: %s", r.err)
			}
			if r.code != 0 || !regexp.MustCompile(`^[0-9a-f]{16,}\n$`).MatchString(r.out) {
				t.Fatalf("template key: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
			}
			return r.out
		}
		a, b := key(), key()
		if err := os.WriteFile(sqlFile, []byte("CREATE TABLE t (id BIGINT PRIMARY KEY);\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if c := key(); a != b || c == a {
			t.Fatalf("keys %q, %q and after a change %q: want the first two equal and the third different", a, b, c)
		}
		// Page compression is part of the key: a compressed template is
		// another template.
		if d := key("--innodb-compression"); d == key() || d != key("--innodb-compression") {
			t.Fatalf("key with --innodb-compression %q: want it stable and apart from the key without", d)
		}
	})
	t.Run("pack and unpack", func(t *testing.T) {
		src := filepath.Join(dir, "data")
		if err := os.MkdirAll(filepath.Join(src, "db"), 0o700); err != nil {
			t.Fatal(err)
		}
		want := bytes.Repeat([]byte("pristine "), 10000)
		if err := os.WriteFile(filepath.Join(src, "db", "t.ibd"), want, 0o600); err != nil {
			t.Fatal(err)
		}
		r := pristine(t, root, "", "pack", src)
		if r.code != 0 || len(r.out) == 0 {
			t.Fatalf("pack: exit %d, %d bytes out, stderr %q", r.code, len(r.out), r.err)
		}
		archive := filepath.Join(dir, "data.prsa")
		if err := os.WriteFile(archive, []byte(r.out), 0o600); err != nil {
			t.Fatal(err)
		}
		for i, args := range [][]string{{"unpack", archive}, {"unpack", "-"}} {
			out := filepath.Join(dir, "out"+string(rune('a'+i)))
			in := ""
			if args[1] == "-" {
				in = r.out // standard input is the command's own In
			}
			u := pristine(t, root, in, append(args, out)...)
			if u.code != 0 || !strings.Contains(u.out, "unpacked 1 files") {
				t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, u.code, u.out, u.err)
			}
			got, err := os.ReadFile(filepath.Join(out, "db", "t.ibd"))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%v: t.ibd %d bytes (%v), want the %d packed", args, len(got), err, len(want))
			}
		}
		if r := pristine(t, root, "not an archive at all", "unpack", "-", filepath.Join(dir, "outc")); r.code != ExitFailed && r.code != ExitBadInput {
			t.Fatalf("unpack of garbage: exit %d, stderr %q", r.code, r.err)
		}
	})
}

// TestExitCodeTable maps each kind of error to its code.
func TestExitCodeTable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("boom"), ExitFailed},
		{ErrUsage, ExitBadInput},
		{context.Canceled, ExitInterrupted},
		{fmt.Errorf("%w on /r/pristine.sock: start one", client.ErrNoDaemon), ExitNoDaemon},
		{fmt.Errorf("lease: %w", pool.ErrLeaseTimeout), ExitNoFreeDB},
		{fmt.Errorf("%w: 9 slots need 9 GiB", pool.ErrNoRoom), ExitDoesNotFit},
		{&client.APIError{Status: 400, Message: "size must be from 1 to 4096"}, ExitBadInput},
		{&client.APIError{Status: 507, Message: "pool does not fit"}, ExitDoesNotFit},
		{&client.APIError{Status: 503, Message: "lease app: no slot became free in time (1m)"}, ExitNoFreeDB},
		{&client.APIError{Status: 503, Message: "pool is shutting down"}, ExitFailed},
		{errors.New("unknown flag: --x"), ExitBadInput},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
