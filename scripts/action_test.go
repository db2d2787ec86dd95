package scripts

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// action is the part of action.yml a runner reads.
type action struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Run  string            `yaml:"run"`
	Uses string            `yaml:"uses"`
	Env  map[string]string `yaml:"env"`
	With map[string]string `yaml:"with"`
}

// fakeRunner runs a composite action's steps as GitHub's runner does, on
// this machine: each run step in bash in the workspace, with fresh
// $GITHUB_OUTPUT, $GITHUB_ENV and $GITHUB_PATH files read back after it;
// actions/cache/restore and save against a directory standing in for the
// cache service. Expressions it cannot evaluate fail the test, so the
// action cannot outgrow it unnoticed.
type fakeRunner struct {
	t          *testing.T
	repo, ws   string
	temp       string
	cacheStore string
	inputs     map[string]string
	env        map[string]string // $GITHUB_ENV so far
	path       []string          // $GITHUB_PATH so far, newest first
	outputs    map[string]map[string]string
	log        strings.Builder
}

var exprRe = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// eval evaluates one expression of the forms action.yml uses: a || b,
// inputs.X, steps.ID.outputs.X, github.action_ref, and A != 'B'.
func (r *fakeRunner) eval(e string) string {
	if a, b, ok := strings.Cut(e, "!="); ok {
		if r.eval(strings.TrimSpace(a)) != strings.Trim(strings.TrimSpace(b), "'") {
			return "true"
		}
		return ""
	}
	for _, term := range strings.Split(e, "||") {
		term = strings.TrimSpace(term)
		var v string
		switch f := strings.Split(term, "."); {
		case len(f) == 2 && f[0] == "inputs":
			v = r.inputs[f[1]]
		case len(f) == 4 && f[0] == "steps" && f[2] == "outputs":
			v = r.outputs[f[1]][f[3]]
		case term == "github.action_ref":
			v = ""
		default:
			r.t.Fatalf("action.yml: the fake runner cannot evaluate %q", term)
		}
		if v != "" {
			return v
		}
	}
	return ""
}

func (r *fakeRunner) expand(s string) string {
	return exprRe.ReplaceAllStringFunc(s, func(m string) string { return r.eval(exprRe.FindStringSubmatch(m)[1]) })
}

// environ is the process environment of a step, with the action's
// $GITHUB_ENV and $GITHUB_PATH applied.
func (r *fakeRunner) environ(extra map[string]string) []string {
	env := []string{"PATH=" + strings.Join(append(append([]string{}, r.path...), os.Getenv("PATH")), ":")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	for _, m := range []map[string]string{r.env, extra} {
		for k, v := range m {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// run runs the action's steps in order.
func (r *fakeRunner) run(a action) {
	r.outputs = map[string]map[string]string{}
	for i, s := range a.Runs.Steps {
		if s.If != "" && r.eval(s.If) == "" {
			continue
		}
		out := map[string]string{}
		switch {
		case s.Run != "":
			out = r.runStep(i, s)
		case strings.HasPrefix(s.Uses, "actions/cache/restore@"):
			key, dir := r.expand(s.With["key"]), filepath.Join(r.ws, r.expand(s.With["path"]))
			out["cache-hit"] = "false"
			if _, err := os.Stat(filepath.Join(r.cacheStore, key)); err == nil {
				copyDir(r.t, filepath.Join(r.cacheStore, key), dir)
				out["cache-hit"] = "true"
			}
			fmt.Fprintf(&r.log, "step %d: cache restore %s: hit=%s\n", i, key, out["cache-hit"])
		case strings.HasPrefix(s.Uses, "actions/cache/save@"):
			key, dir := r.expand(s.With["key"]), filepath.Join(r.ws, r.expand(s.With["path"]))
			copyDir(r.t, dir, filepath.Join(r.cacheStore, key))
			fmt.Fprintf(&r.log, "step %d: cache save %s\n", i, key)
		default:
			r.t.Fatalf("action.yml step %d: the fake runner does not know %q", i, s.Uses)
		}
		if s.ID != "" {
			r.outputs[s.ID] = out
		}
	}
}

// runStep runs one run step and reads back its files.
func (r *fakeRunner) runStep(i int, s actionStep) map[string]string {
	files := map[string]string{}
	for _, f := range []string{"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH"} {
		files[f] = filepath.Join(r.temp, fmt.Sprintf("step%d-%s", i, f))
		write(r.t, files[f], "")
	}
	extra := map[string]string{"GITHUB_ACTION_PATH": r.repo, "GITHUB_WORKSPACE": r.ws, "RUNNER_TEMP": r.temp}
	for k, v := range files {
		extra[k] = v
	}
	for k, v := range s.Env {
		extra[k] = r.expand(v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", r.expand(s.Run))
	cmd.Dir, cmd.Env = r.ws, r.environ(extra)
	out, err := cmd.CombinedOutput()
	fmt.Fprintf(&r.log, "step %d: %s\n%s", i, strings.TrimSpace(s.Run), out)
	if err != nil {
		r.t.Fatalf("action step %d (%s) failed: %v\n%s", i, s.Run, err, r.log.String())
	}
	for _, kv := range lines(r.t, files["GITHUB_ENV"]) {
		k, v, _ := strings.Cut(kv, "=")
		r.env[k] = v
	}
	r.path = append(lines(r.t, files["GITHUB_PATH"]), r.path...)
	outputs := map[string]string{}
	for _, kv := range lines(r.t, files["GITHUB_OUTPUT"]) {
		k, v, _ := strings.Cut(kv, "=")
		outputs[k] = v
	}
	return outputs
}

func lines(t *testing.T, file string) []string {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", from+"/.", to+"/").CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v: %s", from, to, err, out)
	}
}

// releaseTarball builds pristine and packs it as scripts/release.sh does,
// beside a SHA256SUMS, and returns the tarball's path.
func releaseTarball(t *testing.T, repo, dir string) string {
	name := "pristine_vtest_linux_" + runtime.GOARCH
	bin := filepath.Join(dir, name, "pristine")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/pristine")
	build.Dir, build.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	tarball := filepath.Join(dir, name+".tar.gz")
	if out, err := exec.Command("tar", "-C", dir, "-czf", tarball, name).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	b, err := os.ReadFile(tarball)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	write(t, filepath.Join(dir, "SHA256SUMS"), hex.EncodeToString(sum[:])+"  "+name+".tar.gz\n")
	return tarball
}

// TestActionSteps runs action.yml's steps in order against a fake
// $GITHUB_* environment, twice, as two jobs sharing actions/cache: the
// first misses the cache, builds the template and saves it; the second
// restores and imports it. After each, a test step takes a lease through
// the daemon the action brought up (found by the PRISTINE_ROOT it
// exported) and queries it.
func TestActionSteps(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the action's scratch step mounts a filesystem (a runner has sudo)")
	}
	if _, err := exec.LookPath("mariadbd"); err != nil {
		if _, err := os.Stat("/usr/sbin/mariadbd"); err != nil {
			t.Skip("needs MariaDB (scripts/install-deps.sh)")
		}
	}
	repo, _ := filepath.Abs("..")
	b, err := os.ReadFile(filepath.Join(repo, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("action.yml runs using %q, not composite", a.Runs.Using)
	}
	dir := t.TempDir()
	tarball := releaseTarball(t, repo, filepath.Join(dir, "release"))
	cacheStore := filepath.Join(dir, "cache-service")
	for job, wantHit := range []string{"false", "true"} {
		ws := filepath.Join(dir, fmt.Sprintf("job%d", job))
		write(t, filepath.Join(ws, "db/schema.sql"), "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1), (2), (3);\n")
		root, err := os.MkdirTemp("/tmp", "pa") // short: slot socket paths are capped
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(root, 0o755); err != nil { // the servers' ids pass through
			t.Fatal(err)
		}
		r := &fakeRunner{t: t, repo: repo, ws: ws, temp: filepath.Join(ws, ".runner-temp"), cacheStore: cacheStore,
			inputs: map[string]string{}, env: map[string]string{}}
		for k, in := range a.Inputs {
			r.inputs[k] = in.Default
		}
		for k, v := range map[string]string{"url": tarball, "install-server": "false", "from-sql": "db/schema.sql",
			"pool-size": "2", "scratch-size": "1G", "root": root} {
			r.inputs[k] = v
		}
		if err := os.MkdirAll(r.temp, 0o755); err != nil {
			t.Fatal(err)
		}
		down := func() {
			cmd := exec.Command("bash", "-c", "pristine pool down --all; pristine scratch down; rm -rf --one-file-system \"$PRISTINE_ROOT\"")
			cmd.Env = r.environ(nil)
			_ = cmd.Run()
		}
		t.Cleanup(down)
		r.run(a)
		if got := r.outputs["restore"]["cache-hit"]; got != wantHit {
			t.Fatalf("job %d: cache-hit %q, want %q\n%s", job, got, wantHit, r.log.String())
		}
		if r.env["PRISTINE_ROOT"] != root || r.outputs["pool"]["socket"] != root+"/pristine.sock" {
			t.Fatalf("job %d: the action exported PRISTINE_ROOT=%q and socket %q, want %s\n%s", job, r.env["PRISTINE_ROOT"], r.outputs["pool"]["socket"], root, r.log.String())
		}
		// The test step: a lease through the exported daemon.
		cmd := exec.Command("bash", "-ec", `eval "$(pristine lease)"; mariadb -N -e 'SELECT COUNT(*) FROM t'; pristine release "$PRISTINE_LEASE" >&2`)
		cmd.Dir, cmd.Env = ws, r.environ(nil)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != "3" {
			t.Fatalf("job %d: a lease through the action's daemon: %v: %s%s\n%s", job, err, out, stderr.String(), r.log.String())
		}
		t.Logf("job %d: cache-hit %s, key %s, a lease taken and released", job, wantHit, r.outputs["key"]["key"])
		down()
	}
}

// TestActionInstallRefusesTamperedRelease plays whoever swapped the
// release tarball (a mirror, a cache, a compromised download): the
// install step refuses a tarball whose SHA-256 is not the one the
// release's SHA256SUMS names, before it unpacks or runs anything.
func TestActionInstallRefusesTamperedRelease(t *testing.T) {
	dir := t.TempDir()
	name := "pristine_vtest_linux_" + runtime.GOARCH
	write(t, filepath.Join(dir, name, "pristine"), "#!/bin/sh\necho planted >\"$MARK\"\n")
	tarball := filepath.Join(dir, name+".tar.gz")
	if out, err := exec.Command("tar", "-C", dir, "-czf", tarball, name).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	write(t, filepath.Join(dir, "SHA256SUMS"), strings.Repeat("0", 64)+"  "+name+".tar.gz\n")
	gh := filepath.Join(dir, "gh")
	mark := filepath.Join(dir, "ran")
	out, err := sh(t, []string{"PRISTINE_URL_INPUT=" + tarball, "PRISTINE_INSTALL_SERVER=false", "RUNNER_TEMP=" + dir,
		"GITHUB_PATH=" + gh + "-path", "GITHUB_ENV=" + gh + "-env", "GITHUB_WORKSPACE=" + dir, "MARK=" + mark},
		"bash action/install.sh")
	if err == nil {
		t.Fatalf("the install step accepted a tarball that does not match SHA256SUMS:\n%s", out)
	}
	if !strings.Contains(out, "does not match the release's SHA256SUMS") {
		t.Errorf("the refusal does not say why:\n%s", out)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the install step ran the tampered binary")
	}
	if b, _ := os.ReadFile(gh + "-path"); len(b) > 0 {
		t.Errorf("the install step put the tampered release on $GITHUB_PATH: %s", b)
	}
}
