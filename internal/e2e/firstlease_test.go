package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// TestFirstLeaseBeforePoolUp: a test gets its database from the first slot
// that answers. `pool up --min-ready` equal to the size keeps pool up
// running until every slot answered; meanwhile `pool status` lists the
// pool with slots starting and `lease --wait` is granted, before pool up
// exits (checked by the order of events: pool up still running when the
// lease is printed). A pool up with the default min-ready returns at the
// first round of starts and says how many slots still start; pool down
// right after stops them all.
func TestFirstLeaseBeforePoolUp(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)

	const size = "20"
	up := exec.Command(bin, "--root", e.root, "pool", "up", "--size", size, "--min-ready", size, "--parallel", "2")
	var upOut, upErr bytes.Buffer
	up.Stdout, up.Stderr = &upOut, &upErr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	upDone := make(chan error, 1)
	go func() { upDone <- up.Wait() }()
	running := func() bool {
		select {
		case err := <-upDone:
			upDone <- err
			return false
		default:
			return true
		}
	}
	// The pool is listed, slots starting, while pool up runs.
	var st []struct {
		Size   int
		States map[string]int
	}
	for {
		out, _, err := e.run("pool", "status", "--json")
		if err == nil && json.Unmarshal([]byte(out), &st) == nil && len(st) == 1 {
			break
		}
		if !running() {
			t.Fatalf("pool up exited (%v) before its pool was listed\n%s%s", <-upDone, upOut.String(), upErr.String())
		}
		waitShort()
	}
	if st[0].Size != 20 || st[0].States["starting"] == 0 || !running() {
		t.Fatalf("pool status while pool up runs: %+v (pool up running: %v); want 20 slots, some starting", st[0], running())
	}
	l := e.leaseWith("--wait", "2m")
	if !running() {
		t.Fatalf("pool up of %s slots with --min-ready %s exited before the first lease was granted: the lease waited for every slot", size, size)
	}
	if got, err := query(t, l.DSN, "SELECT v FROM canary WHERE id=1"); err != nil || got != "pristine" {
		t.Fatalf("the first lease's database: %q, %v", got, err)
	}
	if err := <-upDone; err != nil {
		t.Fatalf("pool up: %v\n%s%s", err, upOut.String(), upErr.String())
	}
	if !strings.Contains(upOut.String(), "pool app: 20 slots ready in") {
		t.Fatalf("pool up --min-ready 20 printed %q; want every slot ready", upOut.String())
	}
	e.must("release", l.ID)
	e.must("pool", "down")
	waitNoDaemon(t, e.root)

	// The default min-ready: the first round (--parallel 2) of 20.
	out := e.must("pool", "up", "--size", size, "--parallel", "2")
	if !regexp.MustCompile(`pool app: \d+ of 20 slots ready in .*, \d+ still starting in the background`).MatchString(out) {
		t.Fatalf("pool up with the default --min-ready printed %q; want it back early, saying how many still start", out)
	}
	e.must("pool", "down") // while slots still start
	waitNoDaemon(t, e.root)
	if left := mariadb.KillOrphans(e.root); len(left) > 0 {
		t.Fatalf("servers left running after pool down during the background start: %v", left)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.root, "data", "pools")); len(ents) > 0 {
		t.Fatalf("clones left after pool down during the background start: %d pool directories", len(ents))
	}
}

// leaseWith runs `lease --json` with more flags and returns the lease.
func (e *env) leaseWith(args ...string) lease {
	e.t.Helper()
	var l lease
	if err := json.Unmarshal([]byte(e.must(append([]string{"lease", "--json"}, args...)...)), &l); err != nil {
		e.t.Fatal(err)
	}
	return l
}
