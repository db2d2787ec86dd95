// Package scripts tests the logic of the shell scripts that install, build
// and run pristine, one helper at a time, with stand-ins for apt-get and the
// daemon where the real ones would change the machine.
package scripts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sh runs a bash snippet in the scripts directory and returns its combined
// output; a snippet that runs longer than a minute is killed and fails.
func sh(t *testing.T, env []string, script string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+script)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the script did not finish within a minute:\n%s\n%s", script, out.String())
	}
	return out.String(), err
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestDebianURI(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"deb822 with security first", map[string]string{"sources.list.d/debian.sources": `Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
`}, "http://mirror.example/debian"},
		{"one-line with options", map[string]string{"sources.list": "# deb http://old.example/debian bookworm main\ndeb [signed-by=/k.gpg arch=amd64] http://mirror.example/debian bookworm main\n"}, "http://mirror.example/debian"},
		{"only security", map[string]string{"sources.list": "deb http://security.example/debian-security bookworm-security main\n"}, ""},
		{"third-party only", map[string]string{"sources.list.d/x.list": "deb https://packages.example/apt cloud-sdk main\n"}, ""},
		{"nothing configured", map[string]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tc.files {
				write(t, filepath.Join(dir, name), text)
			}
			out, err := sh(t, []string{"APT=" + dir}, `source lib/apt.sh; debian_uri "$APT"`)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got := strings.TrimSpace(out); got != tc.want {
				t.Errorf("debian_uri = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInstallDepsUsesConfiguredSources: install-deps.sh writes no mirror of
// its own: the backports line, when it needs one, is made from the
// configured sources.
func TestInstallDepsUsesConfiguredSources(t *testing.T) {
	b, err := os.ReadFile("install-deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "deb.debian.org") || strings.Contains(line, "deb http") {
			t.Errorf("install-deps.sh names a mirror of its own: %s", strings.TrimSpace(line))
		}
	}
}

// TestInstallDepsInstallsWhatScriptsCall: every tool the scripts call that
// a minimal Debian lacks is in install-deps.sh's package list.
func TestInstallDepsInstallsWhatScriptsCall(t *testing.T) {
	out, err := sh(t, nil, `eval "$(grep -E '^pkgs(\+)?=\(' install-deps.sh)"; printf '%s\n' "${pkgs[@]}"`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	have := map[string]bool{}
	for _, p := range strings.Fields(out) {
		have[p] = true
	}
	for tool, pkg := range map[string]string{"curl": "curl", "timeout": "coreutils", "pgrep": "procps", "phpunit": "phpunit",
		"mariadb-install-db": "mariadb-server", "mariadb-dump": "mariadb-client", "gcc": "gcc", "git": "git", "debootstrap": "debootstrap"} {
		if !have[pkg] {
			t.Errorf("the scripts call %s, but install-deps.sh does not install %s", tool, pkg)
		}
	}
}

// TestAptStep: the apt phase says what it does and shows each package
// set up; a failure shows apt-get's own output and fails.
func TestAptStep(t *testing.T) {
	stub := filepath.Join(t.TempDir(), "apt-get")
	write(t, stub, `#!/bin/sh
echo "Reading package lists..."
echo "Get:1 http://mirror.example/debian bookworm/main amd64 curl 7.88"
echo "Setting up curl (7.88) ..."
[ "$1" = fail ] && { echo "E: Unable to locate package nosuch"; exit 100; }
exit 0
`)
	out, err := sh(t, nil, `source lib/apt.sh; apt_step "installing curl" `+stub+` install`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"install-deps: installing curl", "install-deps:   Setting up curl", "install-deps:   Get:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("apt_step printed %q, want a line %q", out, want)
		}
	}
	if strings.Contains(out, "Reading package lists") {
		t.Errorf("apt_step printed apt-get's chatter on success: %q", out)
	}
	out, err = sh(t, nil, `source lib/apt.sh; apt_step "installing nosuch" `+stub+` fail`)
	if err == nil || !strings.Contains(out, "Unable to locate package nosuch") {
		t.Errorf("apt_step on a failing apt-get: err %v, output %q; want a failure that shows apt-get's error", err, out)
	}
}

// TestStopDaemonNeverHangs: a daemon that ignores the shutdown request and
// SIGTERM, and a server left under the root, are both killed; the cleanup
// of bench-django.sh used to wait for such a daemon forever.
func TestStopDaemonNeverHangs(t *testing.T) {
	root := t.TempDir()
	out, err := sh(t, []string{"ROOT=" + root}, `
source lib/daemon.sh
# A daemon that answers nothing and ignores SIGTERM.
bash -c 'trap "" TERM; while :; do sleep 0.1; done' &
pid=$!
# A "server" of this root, as pgrep sees it.
(exec -a "mariadbd --datadir=$ROOT/data/pools/x/000/data" sleep 600) &
srv=$!
stop_daemon false "$ROOT" "$pid" 1
sleep 0.2
kill -0 "$pid" 2>/dev/null && echo "daemon alive"
kill -0 "$srv" 2>/dev/null && echo "server alive"
wait "$srv" 2>/dev/null || true
echo done`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(out, "alive") || !strings.Contains(out, "done") {
		t.Errorf("stop_daemon left processes running:\n%s", out)
	}
	if !strings.Contains(out, "did not stop in 1s") || !strings.Contains(out, "killing servers left running under "+root) {
		t.Errorf("stop_daemon did not say what it killed:\n%s", out)
	}
}

// TestBenchDjangoCleanupBounded: bench-django.sh stops its daemon with
// stop_daemon (bounded), not with a bare wait after a curl that may fail.
func TestBenchDjangoCleanupBounded(t *testing.T) {
	b, err := os.ReadFile("bench-django.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, "stop_daemon bin/pristine") || strings.Contains(s, `wait "$SPID"`) {
		t.Error("bench-django.sh's cleanup waits for its daemon without a bound; use stop_daemon")
	}
}

// TestInstallBin: demo.sh leaves pristine on PATH through install-bin.sh.
func TestInstallBin(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "src", "pristine")
	write(t, bin, "#!/bin/sh\necho 'pristine test-version'\n")
	dst := filepath.Join(dir, "bin")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := sh(t, []string{"PRISTINE_BIN=" + bin}, `bash install-bin.sh "`+dst+`"`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	st, err := os.Stat(filepath.Join(dst, "pristine"))
	if err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("install-bin.sh did not install an executable pristine in %s: %v (%s)", dst, err, out)
	}
	if !strings.Contains(out, "test-version") || !strings.Contains(out, "not on PATH") {
		t.Errorf("install-bin.sh output %q: want the installed version and a PATH hint", out)
	}
	demo, err := os.ReadFile("demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(demo), "bash scripts/install-bin.sh") {
		t.Error("demo.sh does not put pristine on PATH (bash scripts/install-bin.sh)")
	}
}

// TestCleanTestLeftovers: test.sh's exit trap kills the servers of test
// directories made during the run, removes those directories and the
// shared base, and leaves older directories alone; while a test binary of
// another run is alive it touches nothing (two runs share /dev/shm).
func TestCleanTestLeftovers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other string // the environment of a live test binary, or "" for none
		clean bool
	}{
		{"alone", "", true},
		{"a test binary of this run", "PRISTINE_TEST_RUN=$stamp", true},
		{"a test binary of another run", "PRISTINE_TEST_RUN=/tmp/pristine-test-run-other", false},
		{"a test binary of no run", "HOME=/root", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shm, proc := t.TempDir(), t.TempDir()
			out, err := sh(t, []string{"SHM=" + shm, "PROC=" + proc, "OTHER=" + tc.other}, `
source lib/testclean.sh
mkdir -p "$SHM/pristine-e2e-test-old/root"
touch -d '1 hour ago' "$SHM/pristine-e2e-test-old"
stamp="$(mktemp)"; touch -d '1 minute ago' "$stamp"
if [ -n "$OTHER" ]; then
  mkdir "$PROC/4242" && ln -s /tmp/go-build1/b001/pool.test "$PROC/4242/exe"
  eval "printf '%s\0' \"$OTHER\"" >"$PROC/4242/environ"
fi
mkdir -p "$SHM/pristine-store-test-1/root/data" "$SHM/pristine-test-base-abc/data"
head -c 1000000 /dev/zero > "$SHM/pristine-store-test-1/root/data/ibdata1"
(exec -a "mariadbd --datadir=$SHM/pristine-store-test-1/root/data" sleep 600) &
srv=$!
sleep 0.2
clean_test_leftovers "$stamp" "$SHM" "$PROC"
kill -0 "$srv" 2>/dev/null && echo "server alive"
kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true
ls "$SHM"
rm -f "$stamp"`)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			gone := !strings.Contains(out, "server alive") && !strings.Contains(out, "\npristine-store-test-1\n") &&
				!strings.Contains(out, "pristine-test-base-abc\n")
			if !strings.Contains(out, "pristine-e2e-test-old") {
				t.Errorf("the directory older than the run was removed; ls shows:\n%s", out)
			}
			if tc.clean && !gone {
				t.Errorf("want the run's server stopped and its directories gone; got:\n%s", out)
			}
			if !tc.clean && (!strings.Contains(out, "server alive") || !strings.Contains(out, "pristine-store-test-1") ||
				!strings.Contains(out, "another test run is running (test binaries 4242)")) {
				t.Errorf("want another run's server and directories left alone, and why; got:\n%s", out)
			}
		})
	}
	b, err := os.ReadFile("test.sh")
	if err != nil || !strings.Contains(string(b), "clean_test_leftovers \"$STAMP\"") ||
		!strings.Contains(string(b), "export PRISTINE_TEST_RUN=") {
		t.Error("test.sh does not clean up on every exit, or does not mark its test binaries (PRISTINE_TEST_RUN)")
	}
}
