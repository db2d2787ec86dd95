package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// craftedOptions are the server options an attacker who may write to a
// repository puts in a template's meta.json: code (a plugin from the data
// directory), a server without grant tables or TLS, files and logs where
// it likes. Each is refused, named, by every pull.
var craftedOptions = [][]string{
	{"plugin-dir=/proc/self/cwd/shop", "plugin-load-add=evil.so"},
	{"loose_require_secure_transport=OFF"},
	{"skip-grant-tables"},
	{"init-file=/proc/self/cwd/shop/evil.sql"},
	{"general-log=1", "general-log-file=/proc/self/cwd/shop/general.log"},
	{"slow-query-log-file=/tmp/slow.log"},
	{"log-error=/tmp/evil.log"},
}

// pushCrafted makes Push send template m's archive with its meta.json's
// server_options set to opts, as whoever may push to the repository can
// (pristine's own export refuses such a template). It is undone when the
// test ends.
func pushCrafted(t *testing.T, opts []string) {
	t.Helper()
	old := exportArchive
	t.Cleanup(func() { exportArchive = old })
	exportArchive = func(ctx context.Context, st *template.Builder, m *catalog.Meta, w io.Writer, opt archive.PackOptions) (archive.Stats, error) {
		dir := st.Catalog().Dir(m.Hash)
		raw, err := os.ReadFile(filepath.Join(dir, catalog.MetaFile))
		if err != nil {
			return archive.Stats{}, err
		}
		var mm map[string]any
		if err := json.Unmarshal(raw, &mm); err != nil {
			return archive.Stats{}, err
		}
		mm["server_options"] = opts
		crafted, err := json.Marshal(mm)
		if err != nil {
			return archive.Stats{}, err
		}
		opt.Replace = map[string][]byte{catalog.MetaFile: crafted}
		return archive.Pack(ctx, dir, w, opt)
	}
}

// TestPullRefusesCraftedServerOptions: `template pull` of a template whose
// meta.json carries a server option a template may not carry (plugin-dir
// and plugin-load-add, require_secure_transport=OFF, skip-grant-tables,
// init-file, log files) is refused with an error naming the option, and
// leaves nothing in the store; the same template with its own options
// pulls.
func TestPullRefusesCraftedServerOptions(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	a, m := newStoreWith(t, "shop")
	b := templatetest.NewBuilder(t, "auto")
	ctx := context.Background()
	for i, opts := range craftedOptions {
		t.Run(opts[0], func(t *testing.T) {
			pushCrafted(t, opts)
			ref := fmt.Sprintf("%s/fleet/templates:evil%d", reg.Addr, i)
			if _, err := Push(ctx, a, m, ref, PushOptions{Remote: reg.remote()}); err != nil {
				t.Fatal(err)
			}
			_, _, err := Pull(ctx, b, ref, PullOptions{Remote: reg.remote()})
			if !errors.Is(err, mariadb.ErrServerOption) || !strings.Contains(err.Error(), opts[0]) {
				t.Fatalf("pull of a template with server options %q: %v, want refused naming %s", opts, err, opts[0])
			}
			noLeftovers(t, b, false)
		})
	}
	ref := reg.Addr + "/fleet/templates:good"
	if _, err := Push(ctx, a, m, ref, PushOptions{Remote: reg.remote()}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := Pull(ctx, b, ref, PullOptions{Remote: reg.remote()}); err != nil || strings.Join(got.ServerOptions, " ") != strings.Join(m.ServerOptions, " ") {
		t.Fatalf("pull of the template as built: %v, options %q", err, got.ServerOptions)
	}
}

// TestCachedBuildRefusesCraftedServerOptions: a fleet cache entry pushed
// under the content key of a build, whose meta.json carries plugin-dir and
// plugin-load-add, is not taken: its pull (the daemon's, `serve
// --allow-cache`) is refused naming the option, and `template build
// --cache` warns, naming the option, and builds the template here with its
// own options.
func TestCachedBuildRefusesCraftedServerOptions(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	ctx := context.Background()
	in := filepath.Join(t.TempDir(), "fleet.sql")
	if err := os.WriteFile(in, []byte(tinySQL), 0o644); err != nil {
		t.Fatal(err)
	}
	opt := template.BuildOptions{Name: "fleet", FromSQL: in, Profile: mariadb.DefaultProfile()}
	var mu sync.Mutex
	var logged []string
	c := CacheOptions{Remote: reg.remote(), Repo: reg.Addr + "/fleet/cache", Settle: 100 * time.Millisecond, Poll: 100 * time.Millisecond}
	c.Log = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}

	// The attacker builds the same inputs (so the same key) and pushes
	// them under the key's tag with its own options.
	attacker := templatetest.NewBuilder(t, "auto")
	evil, _, err := attacker.Build(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Entry(opt.Name, evil.Hash)
	if err != nil {
		t.Fatal(err)
	}
	pushCrafted(t, craftedOptions[0])
	if err := e.Push(ctx, attacker, evil); err != nil {
		t.Fatal(err)
	}
	exportArchive = func(ctx context.Context, st *template.Builder, m *catalog.Meta, w io.Writer, opt archive.PackOptions) (archive.Stats, error) {
		return st.Export(ctx, m, w, opt)
	}

	// The daemon's pull (`serve --allow-cache`: Entry.Pull, then a build
	// here when it fails) is refused, naming the option.
	victim := templatetest.NewBuilder(t, "auto")
	if _, err := e.Pull(ctx, victim); !errors.Is(err, mariadb.ErrServerOption) || !strings.Contains(err.Error(), "plugin-dir=/proc/self/cwd/shop") {
		t.Fatalf("the cache entry's pull: %v, want refused naming plugin-dir", err)
	}
	noLeftovers(t, victim, false)
	m, outcome, err := cachedBuild(ctx, victim, opt, c)
	if err != nil {
		t.Fatal(err)
	}
	if outcome != BuiltHere || strings.Join(m.ServerOptions, " ") != strings.Join(victim.Binary().ServerOptions(nil), " ") {
		t.Fatalf("template build --cache of an entry with plugin options: %s, options %q: want built here with its own options", outcome, m.ServerOptions)
	}
	mu.Lock()
	defer mu.Unlock()
	if all := strings.Join(logged, "\n"); !strings.Contains(all, "plugin-dir=/proc/self/cwd/shop") {
		t.Errorf("the cache's warning does not name the refused option:\n%s", all)
	}
}
