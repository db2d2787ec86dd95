package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type tmplInfo struct {
	Name, Hash, Backend string
}

func (e *env) templates() []tmplInfo {
	e.t.Helper()
	var ts []tmplInfo
	if err := json.Unmarshal([]byte(e.must("template", "ls", "--json")), &ts); err != nil {
		e.t.Fatal(err)
	}
	return ts
}

// TestNoDeadEnds: a rebuild under a name replaces the old build; scratch up
// over a root that has templates names --move, and --move carries them onto
// the scratch filesystem, where their slots are thin clones; template rm
// leaves the data directory empty.
func TestNoDeadEnds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("scratch up needs root")
	}
	e := newEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	first := e.templates()
	os.WriteFile(in, []byte(schema+"INSERT INTO canary VALUES (2, 'second');\n"), 0o644)
	_, errOut, err := e.run("template", "build", "app", "--from-sql", in)
	if err != nil || !strings.Contains(errOut, "replaces "+first[0].Hash[:12]) {
		t.Fatalf("a rebuild under the same name: %v\n%s; want it to say it replaces %s", err, errOut, first[0].Hash[:12])
	}
	ts := e.templates()
	if len(ts) != 1 || ts[0].Hash == first[0].Hash {
		t.Fatalf("templates after a rebuild: %+v, want only the new build", ts)
	}

	_, errOut, err = e.run("scratch", "up", "--size", "512M")
	if err == nil || !strings.Contains(errOut, "--move") || !strings.Contains(errOut, filepath.Join(e.root, "data")) {
		t.Fatalf("scratch up over templates: %v\n%s; want a refusal naming the data directory and --move", err, errOut)
	}
	defer e.run("scratch", "down")
	e.must("scratch", "up", "--size", "512M", "--move")
	ts = e.templates()
	if len(ts) != 1 || ts[0].Hash != e.templates()[0].Hash || ts[0].Backend != "btrfs" {
		t.Fatalf("templates after scratch up --move: %+v, want app on btrfs", ts)
	}
	if _, err := os.Stat(filepath.Join(e.root, "moving")); !os.IsNotExist(err) {
		t.Errorf("scratch up --move left %s/moving: %v", e.root, err)
	}
	e.must("pool", "up", "--template", "app", "--size", "1")
	l := e.lease()
	if v, err := query(t, l.DSN, "SELECT GROUP_CONCAT(v ORDER BY id) FROM canary"); err != nil || v != "pristine,second" {
		t.Fatalf("a slot of the moved template: %q %v", v, err)
	}
	_, errOut, err = e.run("scratch", "down")
	if err == nil || !strings.Contains(errOut, "pristine pool down") {
		t.Fatalf("scratch down with a pool up: %v\n%s; want a refusal naming `pristine pool down`", err, errOut)
	}
	e.must("pool", "down")
	waitNoDaemon(t, e.root)
	e.must("template", "rm", "app")
	ents, _ := os.ReadDir(filepath.Join(e.root, "data"))
	for _, ent := range ents {
		sub, _ := os.ReadDir(filepath.Join(e.root, "data", ent.Name()))
		if ent.Name() != "templates" && ent.Name() != "pools" || len(sub) > 0 {
			t.Errorf("left in data/ after removing the last template: %s (%d entries)", ent.Name(), len(sub))
		}
	}
	e.must("scratch", "down")
}

// waitNoDaemon waits for the daemon of root to remove its socket (it exits
// with its last pool).
func waitNoDaemon(t *testing.T, root string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(filepath.Join(root, "pristine.sock")); os.IsNotExist(err) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the daemon did not exit after its last pool went down")
}

// TestDemoOnRootWithTemplates: the demo succeeds on a root that already has
// templates (which a scratch mount would hide), and leaves them in place.
func TestDemoOnRootWithTemplates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the demo on a tmpfs root mounts a scratch filesystem, which needs root")
	}
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	// One run of the demo: what is checked here is where it runs.
	_, errOut, err := e.run("demo", "--slots", "2", "--scale", "0.02", "--scratch-size", "1G", "--no-baseline", "--runs", "1", "--json")
	if err != nil || !strings.Contains(errOut, "its own root") {
		t.Fatalf("the demo on a root with templates: %v\n%s", err, errOut)
	}
	if ts := e.templates(); len(ts) != 1 || ts[0].Name != "app" {
		t.Fatalf("templates of the root after the demo: %+v, want app alone", ts)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), e.root) {
		t.Errorf("the demo left a filesystem mounted under %s", e.root)
	}
}

// TestDemoThatDoesNotFit: a demo too large for the machine is refused at
// once (exit 5) in its own flags, not pool up's, and leaves nothing mounted.
func TestDemoThatDoesNotFit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the demo on a tmpfs root mounts a scratch filesystem, which needs root")
	}
	e := newEnv(t)
	_, errOut, err := e.run("demo", "--slots", "4000", "--scale", "0.02", "--scratch-size", "1G", "--no-baseline", "--runs", "1")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 || !strings.Contains(errOut, "pool does not fit") || !strings.Contains(errOut, "--slots is the pool's size") {
		t.Fatalf("a demo of 4000 slots: %v\n%s\nwant exit 5, the pool's refusal and the demo's own flags", err, errOut)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), e.root) {
		t.Errorf("the refused demo left a filesystem mounted under %s", e.root)
	}
}

func waitShort() { time.Sleep(25 * time.Millisecond) }
