package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultsAndMessages: pool up takes the only template; its progress
// shows on a terminal and not in a pipe, and its final line always does;
// lease --json fails in JSON; pool status with no pools says so; --help
// lists the user's commands and hides the developer ones.
func TestDefaultsAndMessages(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)

	// On a terminal (script(1) gives the command a pty).
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) not installed (apt-get install bsdutils)")
	}
	tty, err := exec.Command("script", "-qec", bin+" --root "+e.root+" pool up --size 2", "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("pool up on a terminal: %v\n%s", err, tty)
	}
	if !strings.Contains(string(tty), "/2 slots ready") || !strings.Contains(string(tty), "pool app: 2 slots ready in") {
		t.Errorf("pool up on a terminal printed %q: want progress (N/2 slots ready) and the final line", tty)
	}
	e.must("pool", "down")
	waitNoDaemon(t, e.root)
	out, errOut, err := e.run("pool", "up", "--size", "1")
	if err != nil || !strings.Contains(out, "pool app: 1 slots ready in") || strings.Contains(errOut, "slots ready (") {
		t.Fatalf("pool up in a pipe: %v\nstdout %q\nstderr %q; want the final line only", err, out, errOut)
	}

	out, _, err = e.run("lease", "--json", "--template", "nope")
	var je struct{ Error string }
	if err == nil || json.Unmarshal([]byte(out), &je) != nil || je.Error == "" {
		t.Fatalf("lease --json of an unknown pool: %v, stdout %q; want a JSON error on stdout", err, out)
	}
	e.must("pool", "down")
	waitNoDaemon(t, e.root)

	// A daemon with no pools.
	serve := exec.Command(bin, "serve", "--root", e.root)
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { e.run("pool", "down", "--all"); serve.Wait() }()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(filepath.Join(e.root, "pristine.sock")); err == nil {
			break
		}
		waitShort()
	}
	if out := e.must("pool", "status"); !strings.Contains(out, "no pools are up") {
		t.Errorf("pool status with no pools printed %q", out)
	}
	if out := e.must("pool", "status", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("pool status --json with no pools printed %q, want []", out)
	}

	help := e.must("--help")
	if strings.Index(help, "template") > strings.Index(help, "More commands") || strings.Contains(help, "bench-archive") || strings.Contains(help, "soak") {
		t.Errorf("pristine --help:\n%s\nwant the user's commands first and no developer commands", help)
	}
	if h := e.must("lease", "--help"); !strings.Contains(h, "Examples:") {
		t.Errorf("lease --help has no examples:\n%s", h)
	}
}
