package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCIRecipe runs examples/ci/prepare.sh, the step both CI files of
// docs/ci.md run, as two runners sharing a cache: the first builds the
// template and saves it under its content key, the second imports it; both
// bring a pool up that leases. A changed schema is a new key, built again.
func TestCIRecipe(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	cache := filepath.Join(t.TempDir(), "cache")
	sqlFile := filepath.Join(t.TempDir(), "schema.sql")
	os.WriteFile(sqlFile, []byte(schema), 0o644)
	prepare := func(e *env) (string, string) {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join(repo, "examples/ci/prepare.sh"), "app", cache, "--from-sql", sqlFile)
		cmd.Env = append(os.Environ(), "PRISTINE="+bin, "PRISTINE_ROOT="+e.root, "POOL_SIZE=1")
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("prepare.sh: %v\n%s%s", err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	a := newEnv(t)
	out, errOut := prepare(a)
	key := strings.TrimPrefix(strings.TrimSpace(out), "key=")
	if want := strings.TrimSpace(a.must("template", "key", "app", "--from-sql", sqlFile)); key != want || !strings.Contains(errOut, "building it") {
		t.Fatalf("first runner: key %q (template key says %q)\n%s", key, want, errOut)
	}
	if ts := a.templates(); len(ts) != 1 || ts[0].Hash != key {
		t.Fatalf("the content key is not the template's hash: key %s, templates %+v", key, ts)
	}
	if _, err := os.Stat(filepath.Join(cache, "app-"+key+".prsa")); err != nil {
		t.Fatalf("no archive in the cache: %v", err)
	}
	b := newEnv(t)
	if out, errOut := prepare(b); !strings.Contains(errOut, "from the cache") || strings.TrimSpace(out) != "key="+key {
		t.Fatalf("second runner did not import from the cache:\n%s%s", out, errOut)
	}
	if v, err := query(t, b.lease().DSN, "SELECT v FROM canary"); err != nil || v != "pristine" {
		t.Fatalf("a lease on the second runner: %q %v", v, err)
	}
	// template key builds nothing, and a server option is part of the key.
	c := newEnv(t)
	other := strings.TrimSpace(c.must("template", "key", "app", "--from-sql", sqlFile, "--server-option", "character-set-server=latin1"))
	if other == key || len(other) != len(key) {
		t.Errorf("a server option did not change the key: %s vs %s", other, key)
	}
	if ts := c.templates(); len(ts) != 0 {
		t.Errorf("template key built templates: %+v", ts)
	}
	for _, f := range []string{"examples/ci/github-actions.yml", "examples/ci/gitlab-ci.yml"} {
		y, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil || !strings.Contains(string(y), "bash examples/ci/prepare.sh app .pristine-cache") {
			t.Errorf("%s does not run the recipe tested here (%v)", f, err)
		}
	}
}
