package pool_test

// The attacker's tests of "A template is data" (docs/security.md): a
// template's meta.json configures no server beyond the allow-list, and a
// slot's server inherits nothing of pristine's environment.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
)

// TestSecuritySlotEnvironment: a slot's server (and the build's, which
// made its template) starts with PATH and the allocator settings of its
// profile, not with pristine's environment: a secret in the daemon's
// environment (a registry password, a canary) is not in
// /proc/PID/environ of the slot's server.
func TestSecuritySlotEnvironment(t *testing.T) {
	const canary = "canary-6d1f0c2e-not-for-servers"
	t.Setenv("PRISTINE_TEST_CANARY_SECRET", canary)
	t.Setenv("PRISTINE_REGISTRY_PASSWORD", canary+"-registry")
	_, _, _, l := securityPool(t)
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", serverPID(t, l)))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"PATH": true, "TZ": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true,
		"MALLOC_ARENA_MAX": true, "MALLOC_TRIM_THRESHOLD_": true, "MALLOC_TOP_PAD_": true, "TCMALLOC_AGGRESSIVE_DECOMMIT": true}
	var inherited []string
	for _, kv := range strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00") {
		k, _, _ := strings.Cut(kv, "=")
		if strings.Contains(kv, canary) {
			t.Errorf("the slot's server holds the secret of pristine's %s", k)
		} else if !allowed[k] {
			inherited = append(inherited, k)
		}
	}
	if len(inherited) > 0 {
		t.Errorf("the slot's server inherited %s from pristine's environment", strings.Join(inherited, ", "))
	}
	if !bytes.Contains(raw, []byte("PATH=")) {
		t.Errorf("the slot's server has no PATH: %q", raw)
	}
}

// editOptions writes server_options into template m's meta.json on disk,
// as a meta.json from before the allow-list or an edit would have them,
// and loads the template again.
func editOptions(t *testing.T, cat *catalog.Catalog, m *catalog.Meta, opts []string) *catalog.Meta {
	t.Helper()
	path := filepath.Join(cat.Dir(m.Hash), catalog.MetaFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mm map[string]any
	if err := json.Unmarshal(raw, &mm); err != nil {
		t.Fatal(err)
	}
	mm["server_options"] = opts
	if raw, err = json.Marshal(mm); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	edited, err := cat.Load(m.Hash)
	if err != nil {
		t.Fatalf("the edited meta.json does not load (the pool would not get to see it): %v", err)
	}
	return edited
}

// plantPlugin compiles a shared object whose constructor writes a marker
// file, plants it in template m's database directory and returns the
// marker's path, or "" when there is no C compiler (the refusal is still
// tested, without the proof that the code would have run).
func plantPlugin(t *testing.T, cat *catalog.Catalog, m *catalog.Meta) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		return ""
	}
	dir, err := os.MkdirTemp("", "pristine-plugin-marker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil { // the servers' accounts write the marker
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	src := filepath.Join(dir, "evil.c")
	code := `#include <stdio.h>
__attribute__((constructor)) static void evil(void) { FILE *f = fopen("` + marker + `", "w"); if (f) { fputs("the archive's code ran\n", f); fclose(f); } }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(cat.DataDir(m.Hash), m.Database(), "evil.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Logf("gcc cannot build the plugin (%v: %s): testing the refusal only", err, out)
		return ""
	}
	return marker
}

// TestSecurityPoolRefusesTemplateOptions plays a template whose meta.json
// was edited on disk (or written before the allow-list): its options load
// a plugin planted in its data directory, turn off TLS or the grant
// tables, or put files and logs where they like. `pool up` starts no
// server with them: it refuses, naming the option and the fix; the
// planted plugin's code never runs.
func TestSecurityPoolRefusesTemplateOptions(t *testing.T) {
	st, m := build(t, "auto", 1)
	marker := plantPlugin(t, st.Catalog(), m)
	for _, opts := range [][]string{
		{"plugin-dir=/proc/self/cwd/app", "plugin-load-add=evil.so"},
		{"loose_plugin_load_add=evil.so", "PLUGIN_DIR=/proc/self/cwd/app"},
		{"require-secure-transport=OFF"},
		{"skip-grant-tables"},
		{"init-file=/proc/self/cwd/app/evil.sql"},
		{"general-log=1", "general-log-file=/tmp/general.log"},
		{"log-error=/tmp/evil.log"},
	} {
		t.Run(opts[0], func(t *testing.T) {
			if marker != "" {
				os.Remove(marker)
			}
			edited := editOptions(t, st.Catalog(), m, append(st.Binary().ServerOptions(nil), opts...))
			p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), edited, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
			if err == nil {
				p.Down(context.Background())
			}
			if !errors.Is(err, mariadb.ErrServerOption) || !strings.Contains(err.Error(), opts[0]) || !strings.Contains(err.Error(), "pristine template rm") {
				t.Errorf("pool up of a template with server options %q: %v, want refused naming %s and the fix", opts, err, opts[0])
			}
			if marker != "" {
				if b, err := os.ReadFile(marker); err == nil {
					t.Errorf("the plugin planted in the template ran in a slot's server: %s", strings.TrimSpace(string(b)))
				}
			}
		})
	}
	// The template's own options bring a pool up.
	edited := editOptions(t, st.Catalog(), m, m.ServerOptions)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := pool.Up(ctx, st.Catalog(), st.Binary(), edited, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatalf("pool up with the template's own options: %v", err)
	}
	p.Down(context.Background())
}
