package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/oci/localregistry"
)

// TestTemplatePushPullCache ships a template through a registry on
// loopback with the commands a CI job runs: push, pull by name, and
// build --cache on a third runner, which pulls instead of building.
func TestTemplatePushPullCache(t *testing.T) {
	reg, err := localregistry.Start(localregistry.Config{Dir: t.TempDir()})
	if errors.Is(err, localregistry.ErrMissing) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Kill()
	repo := reg.Addr + "/ci/templates"
	a, b, c := newEnv(t), newEnv(t), newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	if err := os.WriteFile(in, []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	a.must("template", "build", "app", "--from-sql", in)
	if out := a.must("template", "push", "app", repo, "--plain-http"); !strings.Contains(out, "pushed template app") {
		t.Fatalf("push: %s", out)
	}
	if out := b.must("template", "pull", repo, "app", "--plain-http"); !strings.Contains(out, "pulled template app") {
		t.Fatalf("pull: %s", out)
	}
	b.must("pool", "up", "--template", "app", "--size", "1")
	l := b.lease()
	if v, err := query(t, l.DSN, "SELECT v FROM canary"); err != nil || v != "pristine" {
		t.Fatalf("a lease of the pulled template: %q %v", v, err)
	}
	b.must("pool", "down")

	_, errOut, err := c.run("template", "pull", repo+":nope", "--plain-http")
	if err == nil || !strings.Contains(errOut, "no such tag") {
		t.Fatalf("pull of a missing tag: %v %s", err, errOut)
	}
	out, errOut, err := c.run("template", "build", "app", "--from-sql", in, "--cache", repo, "--plain-http")
	if err != nil || !strings.Contains(errOut, "pulled from") || !strings.Contains(out, "up to date") {
		t.Fatalf("build --cache of a pushed template: %v\n%s%s", err, out, errOut)
	}
}
