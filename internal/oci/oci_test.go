package oci

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
	"github.com/pristinedb/pristine/internal/verify"
)

// tinySQL makes a template with a few MB of rows, so small chunks give
// several layers.
const tinySQL = `CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(200));
INSERT INTO t (v) VALUES (REPEAT('a', 200)), (REPEAT('b', 200)), (REPEAT('c', 200));
CREATE TABLE u (id INT PRIMARY KEY, note TEXT);
INSERT INTO u VALUES (1, 'one'), (2, 'two');
CREATE VIEW tv AS SELECT id, LEFT(v, 3) AS head FROM t;
`

const smallChunk = 4 << 20

func newStoreWith(t *testing.T, name string) (*template.Builder, *catalog.Meta) {
	st := templatetest.NewBuilder(t, "auto")
	return st, templatetest.Build(t, st, name, tinySQL, template.BuildOptions{})
}

// verifySame starts both templates and compares them object for object,
// as `pristine verify` does.
func verifySame(t *testing.T, a, b *template.Builder, name string) {
	t.Helper()
	ctx := context.Background()
	open := func(st *template.Builder) *verify.Endpoint {
		e, err := verify.Opener{Builder: func(context.Context) (*template.Builder, error) { return st, nil }}.Open(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	src, dst := open(a), open(b)
	pairs, err := verify.ResolvePairs(ctx, src.DB, dst.DB, src.Database, dst.Database, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Compare(ctx, src.Side, dst.Side, verify.Options{Pairs: pairs})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() {
		t.Fatalf("pulled template differs from the pushed one: %+v", rep.Diffs)
	}
	if rep.Objects["table"] < 2 {
		t.Fatalf("verify compared %v: expected the template's tables", rep.Objects)
	}
}

// noLeftovers fails if the store holds a template or a half-made one.
func noLeftovers(t *testing.T, st *template.Builder, keepDownloads bool) {
	t.Helper()
	all, err := st.Catalog().List()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Fatalf("store has templates after a failed pull: %v", all[0].Name)
	}
	ents, _ := os.ReadDir(scratchDir(st))
	for _, e := range ents {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, ".import-"), strings.HasPrefix(n, ".build-"):
			t.Errorf("half-made template left: %s", n)
		case strings.HasPrefix(n, ".pull-") && e.IsDir() && !keepDownloads:
			t.Errorf("download left: %s", n)
		case e.IsDir() && !strings.HasPrefix(n, "."):
			t.Errorf("template directory left: %s", n)
		}
	}
}

func TestPushPullRoundTrip(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	a, m := newStoreWith(t, "shop")
	b := templatetest.NewBuilder(t, "auto")
	ctx := context.Background()
	ref := reg.Addr + "/fleet/templates"

	ps, err := Push(ctx, a, m, ref, PushOptions{Remote: reg.remote(), ChunkSize: smallChunk})
	if err != nil {
		t.Fatal(err)
	}
	if ps.Chunks < 2 || ps.Skipped != 0 || ps.Uploaded != ps.ArchiveBytes {
		t.Fatalf("push: %+v: want several chunks, all uploaded", ps)
	}
	if want := ContentTag(m.Name, m.Hash); len(ps.Tags) != 1 || ps.Tags[0] != want {
		t.Fatalf("push tagged %v, want [%s]", ps.Tags, want)
	}
	again, err := Push(ctx, a, m, ref, PushOptions{Remote: reg.remote(), ChunkSize: smallChunk})
	if err != nil {
		t.Fatal(err)
	}
	if again.Skipped != again.Chunks || again.Uploaded != 0 || again.Digest != ps.Digest {
		t.Fatalf("second push of the same template: %+v, want every chunk skipped and the same manifest %s", again, ps.Digest)
	}

	got, st, err := Pull(ctx, b, ref+":"+ContentTag(m.Name, m.Hash), PullOptions{Remote: reg.remote()})
	if err != nil {
		t.Fatal(err)
	}
	// A plain pull does not trust the key the manifest claims: the template
	// is filed under the manifest's digest.
	if want := catalog.ImportKey("oci:" + ps.Digest); got.Hash != want || got.Name != m.Name || st.Present || st.Downloaded != ps.ArchiveBytes || st.Digest != ps.Digest {
		t.Fatalf("pull: %+v (template %s %s), want %s %s downloaded in full", st, got.Name, got.Hash, m.Name, want)
	}
	noDownloads(t, b)
	verifySame(t, a, b, "shop")

	_, st, err = Pull(ctx, b, ref+":"+ContentTag(m.Name, m.Hash), PullOptions{Remote: reg.remote()})
	if err != nil || !st.Present || st.Downloaded != 0 {
		t.Fatalf("second pull: %+v, %v: want present, nothing downloaded", st, err)
	}
	if _, _, err := Pull(ctx, b, ref+":no-such-tag", PullOptions{Remote: reg.remote()}); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("pull of a missing tag: %v, want ErrNotFound", err)
	}

	// --compress: zstd extents inside the archive, the same template out.
	cs, err := Push(ctx, a, m, ref+":zstd", PushOptions{Remote: reg.remote(), Compress: true, ChunkSize: smallChunk})
	if err != nil {
		t.Fatal(err)
	}
	if cs.ArchiveBytes >= ps.ArchiveBytes {
		t.Fatalf("compressed archive %d bytes, uncompressed %d: want smaller", cs.ArchiveBytes, ps.ArchiveBytes)
	}
	c := templatetest.NewBuilder(t, "auto")
	// A pull that vouches for the key (a fleet cache's) keeps it.
	if got, _, err := Pull(ctx, c, ref+":zstd", PullOptions{Remote: reg.remote(), Key: m.Hash}); err != nil || got.Hash != m.Hash {
		t.Fatalf("pull of a compressed push: %v", err)
	}
	if _, _, err := Pull(ctx, templatetest.NewBuilder(t, "auto"), ref+":zstd", PullOptions{Remote: reg.remote(), Key: strings.Repeat("ab", 32)}); err == nil || !strings.Contains(err.Error(), "claims key") {
		t.Fatalf("pull vouched for another key: %v, want refused", err)
	}
	verifySame(t, a, c, "shop")
}

func noDownloads(t *testing.T, st *template.Builder) {
	t.Helper()
	ents, _ := os.ReadDir(scratchDir(st))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".pull-") && e.IsDir() {
			t.Errorf("download directory left after a pull: %s", e.Name())
		}
	}
}

func TestPullRefusesOtherServerVersion(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	a, m := newStoreWith(t, "ver")
	b := templatetest.NewBuilder(t, "auto")
	ctx := context.Background()
	ref := reg.Addr + "/fleet/templates:ver"
	if _, err := Push(ctx, a, m, ref, PushOptions{Remote: reg.remote()}); err != nil {
		t.Fatal(err)
	}
	bin := *b.Binary()
	bin.Version = "10.0.99-MariaDB-other"
	b = template.NewBuilder(b.Catalog(), &bin)
	_, _, err := Pull(ctx, b, ref, PullOptions{Remote: reg.remote()})
	if !errors.Is(err, catalog.ErrIncompatible) || !strings.Contains(err.Error(), m.Server) || !strings.Contains(err.Error(), bin.Version) {
		t.Fatalf("pull by another server version: %v, want ErrIncompatible naming %s and %s", err, m.Server, bin.Version)
	}
	noLeftovers(t, b, false)
}

func TestAuthAndTLS(t *testing.T) {
	reg := startRegistry(t, registryOpts{TLS: true, Auth: true})
	a, m := newStoreWith(t, "sec")
	b := templatetest.NewBuilder(t, "auto")
	ctx := context.Background()
	ref := reg.Addr + "/fleet/templates:sec"
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials from the machine's docker config

	cases := []struct {
		name    string
		user    string
		pass    string
		docker  bool // credentials in config.json instead of the environment
		caFile  string
		wantErr string
		is      error
	}{
		{name: "no credentials", caFile: reg.CAFile, wantErr: "docker login", is: ErrAuth},
		{name: "wrong password", user: reg.User, pass: "wrong", caFile: reg.CAFile, wantErr: "401", is: ErrAuth},
		{name: "unknown CA", user: reg.User, pass: reg.Pass, wantErr: "--ca-file"},
		{name: "environment", user: reg.User, pass: reg.Pass, caFile: reg.CAFile},
		{name: "docker config.json", user: reg.User, pass: reg.Pass, docker: true, caFile: reg.CAFile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvUsername, "")
			t.Setenv(EnvPassword, "")
			if c.docker {
				cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Addr, base64.StdEncoding.EncodeToString([]byte(c.user+":"+c.pass)))
				if err := os.WriteFile(filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json"), []byte(cfg), 0o600); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json"))
			} else if c.user != "" {
				t.Setenv(EnvUsername, c.user)
				t.Setenv(EnvPassword, c.pass)
			}
			r := Remote{CAFile: c.caFile}
			_, err := Push(ctx, a, m, ref, PushOptions{Remote: r})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || (c.is != nil && !errors.Is(err, c.is)) {
					t.Fatalf("push: %v, want an error mentioning %q", err, c.wantErr)
				}
				if _, _, err := Pull(ctx, b, ref, PullOptions{Remote: r}); err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("pull: %v, want an error mentioning %q", err, c.wantErr)
				}
				noLeftovers(t, b, false)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := Pull(ctx, b, ref, PullOptions{Remote: r})
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != m.Name || got.Imported == "" {
				t.Fatalf("pulled %s (%s, imported %q), want %s filed under its manifest", got.Name, got.Hash, got.Imported, m.Name)
			}
			if err := b.Catalog().Remove(got, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRegistryDiesMidUpload(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	a, m := newStoreWith(t, "cut")
	ctx := context.Background()
	ref := reg.Addr + "/fleet/templates:cut"
	opt := PushOptions{Remote: reg.remote(), ChunkSize: smallChunk}
	opt.Parallel = 1 // chunk 1 uploads while the registry is down
	var once sync.Once
	opt.afterChunk = func(i int) { once.Do(reg.kill) }
	_, err := Push(ctx, a, m, ref, opt)
	if err == nil || !strings.Contains(err.Error(), "running") {
		t.Fatalf("push to a registry killed mid-upload: %v, want an error saying the registry went away", err)
	}
	reg.start(t)
	if _, _, err := Pull(ctx, templatetest.NewBuilder(t, "auto"), ref, PullOptions{Remote: reg.remote()}); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("the tag of an interrupted push: %v, want not found (the manifest goes last)", err)
	}
	opt.afterChunk = nil
	st, err := Push(ctx, a, m, ref, opt)
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped < 1 || st.Uploaded >= st.ArchiveBytes {
		t.Fatalf("resumed push: %+v, want the chunks uploaded before the failure skipped", st)
	}
}

func TestRegistryDiesMidDownload(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	a, m := newStoreWith(t, "cutdl")
	b := templatetest.NewBuilder(t, "auto")
	ctx := context.Background()
	ref := reg.Addr + "/fleet/templates:cutdl"
	if _, err := Push(ctx, a, m, ref, PushOptions{Remote: reg.remote(), ChunkSize: smallChunk}); err != nil {
		t.Fatal(err)
	}
	opt := PullOptions{Remote: reg.remote()}
	opt.Parallel = 1
	var once sync.Once
	opt.afterChunk = func(i int) { once.Do(reg.kill) }
	_, _, err := Pull(ctx, b, ref, opt)
	if err == nil || !strings.Contains(err.Error(), "running") {
		t.Fatalf("pull from a registry killed mid-download: %v, want an error saying the registry went away", err)
	}
	noLeftovers(t, b, true)
	reg.start(t)
	opt.afterChunk = nil
	got, st, err := Pull(ctx, b, ref, opt)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reused < 1 || st.Downloaded >= st.ArchiveBytes {
		t.Fatalf("resumed pull: %+v, want the chunks fetched before the failure reused", st)
	}
	if got.Name != m.Name || got.Hash != catalog.ImportKey("oci:"+st.Digest) {
		t.Fatalf("pulled %s %s, want %s filed under its manifest", got.Name, got.Hash, m.Name)
	}
	noDownloads(t, b)
	verifySame(t, a, b, "cutdl")
}

func TestTamperedBlobRefused(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	a, m := newStoreWith(t, "tamper")
	b := templatetest.NewBuilder(t, "auto")
	ctx := context.Background()
	repo := reg.Addr + "/fleet/templates"
	ref := repo + ":" + ContentTag(m.Name, m.Hash)
	ps, err := Push(ctx, a, m, repo, PushOptions{Remote: reg.remote(), ChunkSize: smallChunk})
	if err != nil {
		t.Fatal(err)
	}
	before, err := FetchManifest(ctx, ref, reg.remote())
	if err != nil {
		t.Fatal(err)
	}
	// Flip one byte in the middle of the largest blob the registry stores
	// (a chunk: the config and manifest are small).
	var biggest string
	var size int64
	err = filepath.WalkDir(filepath.Join(reg.Dir, "docker/registry/v2/blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "data" {
			if fi, err := d.Info(); err == nil && fi.Size() > size {
				biggest, size = p, fi.Size()
			}
		}
		return err
	})
	if err != nil || biggest == "" {
		t.Fatalf("find a blob in the registry's storage: %v", err)
	}
	f, err := os.OpenFile(biggest, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := f.ReadAt(one, size/2); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0xff
	if _, err := f.WriteAt(one, size/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, _, err = Pull(ctx, b, ref, PullOptions{Remote: reg.remote()})
	if !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), filepath.Base(filepath.Dir(biggest))) {
		t.Fatalf("pull of a tampered blob: %v, want ErrDigest naming blob %s (push was %s)", err, filepath.Base(filepath.Dir(biggest)), ps.Digest)
	}
	noLeftovers(t, b, false)

	// build --cache on a damaged entry builds here and pushes a good copy.
	in := filepath.Join(t.TempDir(), "tamper.sql") // the name and bytes templatetest.Build hashed
	if err := os.WriteFile(in, []byte(tinySQL), 0o644); err != nil {
		t.Fatal(err)
	}
	c := CacheOptions{Remote: reg.remote(), Repo: repo, Settle: 100 * time.Millisecond, Poll: 100 * time.Millisecond}
	got, o, err := cachedBuild(ctx, b, template.BuildOptions{Name: "tamper", FromSQL: in, Profile: mariadb.DefaultProfile()}, c)
	if err != nil || o != BuiltHere || got.Hash != m.Hash {
		t.Fatalf("build --cache over a damaged entry: %v %s (hash %v), want built here as %s", err, o, got, m.Hash)
	}
	// The tag now names the new build (its meta.json has its own account
	// password, so its chunks differ from the damaged push's).
	man, err := FetchManifest(ctx, ref, reg.remote())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(man.Layers) == fmt.Sprint(before.Layers) {
		t.Fatalf("the tag still names the damaged push")
	}
}

func TestCachedBuildOnceAcrossRunners(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	ctx := context.Background()
	sqlDir := t.TempDir()
	in := filepath.Join(sqlDir, "fleet.sql")
	if err := os.WriteFile(in, []byte(tinySQL), 0o644); err != nil {
		t.Fatal(err)
	}
	const runners = 2
	stores := make([]*template.Builder, runners)
	for i := range stores {
		stores[i] = templatetest.NewBuilder(t, "auto")
	}
	c := CacheOptions{Remote: reg.remote(), Repo: reg.Addr + "/fleet/cache", Settle: 500 * time.Millisecond, Poll: 100 * time.Millisecond, TTL: 10 * time.Second}
	opt := template.BuildOptions{Name: "fleet", FromSQL: in}
	opt.Profile = mariadb.DefaultProfile()
	var wg sync.WaitGroup
	outcomes := make([]Outcome, runners)
	metas := make([]*catalog.Meta, runners)
	errs := make([]error, runners)
	for i := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			metas[i], outcomes[i], errs[i] = cachedBuild(ctx, stores[i], opt, c)
		}()
	}
	wg.Wait()
	built := 0
	for i := range runners {
		if errs[i] != nil {
			t.Fatalf("runner %d: %v", i, errs[i])
		}
		if outcomes[i] == BuiltHere {
			built++
		} else if outcomes[i] != FromRegistry {
			t.Fatalf("runner %d: outcome %s, want built or pulled", i, outcomes[i])
		}
		if metas[i].Hash != metas[0].Hash {
			t.Fatalf("runners got different templates: %s and %s", metas[0].Hash, metas[i].Hash)
		}
	}
	if built != 1 {
		t.Fatalf("outcomes %v: want the template built once across %d runners", outcomes, runners)
	}
	if _, o, err := cachedBuild(ctx, stores[0], opt, c); err != nil || o != FromStore {
		t.Fatalf("third build on a runner that has it: %s, %v, want local", o, err)
	}
	verifySame(t, stores[0], stores[1], "fleet")
}

// TestCachedBuildTakesOverOrStopsWaiting: a holder that died (its lease is
// never renewed) is taken over once the lease goes stale; a holder that
// keeps renewing but never pushes is waited for until Wait, then the
// runner builds itself. Either way the runner ends with its template.
func TestCachedBuildTakesOverOrStopsWaiting(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	ctx := context.Background()
	in := filepath.Join(t.TempDir(), "fleet.sql")
	if err := os.WriteFile(in, []byte(tinySQL), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		renew bool
	}{
		{"dead holder", false},
		{"holder that never pushes", true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := templatetest.NewBuilder(t, "auto")
			opt := template.BuildOptions{Name: "fleet", FromSQL: in, Profile: mariadb.DefaultProfile()}
			co := CacheOptions{Remote: reg.remote(), Repo: fmt.Sprintf("%s/fleet/cache%d", reg.Addr, i),
				Settle: 100 * time.Millisecond, Poll: 100 * time.Millisecond, TTL: time.Second, Wait: time.Hour}
			if c.renew {
				co.TTL, co.Wait = time.Hour, time.Second
			}
			hash, err := st.Hash(ctx, opt)
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := ParseRef(co.Repo)
			repo, err := co.repository(ref)
			if err != nil {
				t.Fatal(err)
			}
			other, err := newLease(ctx, repo, lockTag(ContentTag(opt.Name, hash)), co.TTL, co.Settle)
			if err != nil {
				t.Fatal(err)
			}
			if got, _, err := other.acquire(ctx); err != nil || !got {
				t.Fatalf("the other runner's lease: %v %v", got, err)
			}
			if c.renew {
				stop := other.keep(ctx)
				defer stop()
			}
			m, o, err := cachedBuild(ctx, st, opt, co)
			if err != nil || o != BuiltHere || m.Hash != hash {
				t.Fatalf("build behind a %s: %v %s, want built here", c.name, err, o)
			}
		})
	}
}

// cachedBuild plans the build as the command line does, then runs
// CachedBuild on the plan.
func cachedBuild(ctx context.Context, st *template.Builder, opt template.BuildOptions, c CacheOptions) (*catalog.Meta, Outcome, error) {
	p, err := st.Plan(ctx, opt)
	if err != nil {
		return nil, "", err
	}
	defer p.Close()
	return CachedBuild(ctx, p, c)
}
