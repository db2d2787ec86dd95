// Package ocibench measures `template push` and `template pull` through a
// registry on loopback (`pristine-bench bench-fleet`): push and pull of the demo
// template, and pull plus one server ready on a clone of demo10 against
// reading the same blobs with cat plus the same server start.
package ocibench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/oci"
	"github.com/pristinedb/pristine/internal/oci/localregistry"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/template"
)

// Options tune Run.
type Options struct {
	// Workloads are demo scales by name: "demo" (1) and "demo10" (10).
	Workloads []string
	// Runs is the number of measured runs of each step (median reported).
	Runs int
	// RegistryDir holds the registry's storage (default: a directory in
	// /dev/shm, removed at the end).
	RegistryDir string
	// InUse reports whether a pool uses a template (it is then not removed
	// and re-pulled).
	InUse func(hash string) bool
	// Log receives progress lines; nil means quiet.
	Log io.Writer
}

// Row is one measured step.
type Row struct {
	Workload string    `json:"workload"`
	Step     string    `json:"step"`
	Median   float64   `json:"median_s"`
	Runs     []float64 `json:"runs_s"`
	Bytes    int64     `json:"bytes"`
}

// Report is what Run measured.
type Report struct {
	Backend string `json:"backend"`
	Server  string `json:"server"`
	Rows    []Row  `json:"rows"`
}

var scales = map[string]float64{"demo": 1, "demo10": 10}

// Run builds (or finds) each workload's template in st, starts a registry
// on loopback and times push, pull, pull+ready and the cat baseline.
func Run(ctx context.Context, st *template.Builder, opt Options) (*Report, error) {
	if opt.Runs <= 0 {
		opt.Runs = 3
	}
	logf := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "bench-fleet: "+format+"\n", args...)
		}
	}
	dir := opt.RegistryDir
	if dir == "" {
		d, err := os.MkdirTemp("/dev/shm", "pristine-bench-registry-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	reg, err := localregistry.Start(localregistry.Config{Dir: dir})
	if err != nil {
		return nil, err
	}
	defer reg.Kill()
	rep := &Report{Backend: st.Catalog().Backend().Name(), Server: st.Binary().Version}
	remote := oci.Remote{PlainHTTP: true, Parallel: 4}
	for _, w := range opt.Workloads {
		scale, ok := scales[w]
		if !ok {
			return nil, fmt.Errorf("bench-fleet: unknown workload %q (demo, demo10)", w)
		}
		m, err := ensure(ctx, st, w, scale, logf)
		if err != nil {
			return nil, err
		}
		if opt.InUse != nil && opt.InUse(m.Hash) {
			return nil, fmt.Errorf("bench-fleet: template %s backs a pool, and the pull runs remove it first: run `pristine pool down --template %s`", w, w)
		}
		base := reg.Addr + "/bench/" + w
		var push, pull, ready, cat, get, write, hash []float64
		var archiveBytes int64
		var layers []ocispec.Descriptor
		for i := range opt.Runs + 1 { // the first run warms up
			ref := fmt.Sprintf("%s-%d-%d:t", base, time.Now().UnixNano(), i)
			ps, err := oci.Push(ctx, st, m, ref, oci.PushOptions{Remote: remote})
			if err != nil {
				return nil, err
			}
			archiveBytes = ps.ArchiveBytes
			if layers, err = manifestLayers(ctx, ref, remote); err != nil {
				return nil, err
			}
			t, err := timePull(ctx, st, m, ref, remote, false)
			if err != nil {
				return nil, err
			}
			tr, err := timePull(ctx, st, m, ref, remote, true)
			if err != nil {
				return nil, err
			}
			tc, err := timeCat(ctx, st, m, reg, layers)
			if err != nil {
				return nil, err
			}
			tg, err := timeGet(ctx, reg, strings.TrimSuffix(ref, ":t"), layers)
			if err != nil {
				return nil, err
			}
			tw, err := timeWrite(ctx, st, reg, layers)
			if err != nil {
				return nil, err
			}
			th, err := timeHash(ctx, reg, layers)
			if err != nil {
				return nil, err
			}
			logf("%s run %d: push %.2fs, pull %.2fs, pull+ready %.2fs, cat+ready %.2fs, GET %.2fs, write+sync %.2fs, SHA-256 %.2fs", w, i, ps.Elapsed.Seconds(), t, tr, tc, tg, tw, th)
			if i == 0 {
				continue
			}
			push = append(push, ps.Elapsed.Seconds())
			pull, ready, cat = append(pull, t), append(ready, tr), append(cat, tc)
			get, write, hash = append(get, tg), append(write, tw), append(hash, th)
		}
		rep.Rows = append(rep.Rows,
			row(w, "template push", push, archiveBytes),
			row(w, "template pull", pull, archiveBytes),
			row(w, "template pull + one server ready", ready, archiveBytes),
			row(w, "cat BLOBS > /dev/null + one server ready", cat, archiveBytes),
			row(w, "HTTP GET of the blobs to /dev/null (4 at once, no hashing)", get, archiveBytes),
			row(w, "cat BLOBS > a file on the root's filesystem + syncfs", write, archiveBytes),
			row(w, "SHA-256 of the blobs, 4 at once (what pull verifies)", hash, archiveBytes))
	}
	return rep, nil
}

func row(w, step string, runs []float64, n int64) Row {
	return Row{Workload: w, Step: step, Median: stats.Median(runs), Runs: runs, Bytes: n}
}

// ensure builds the demo template at scale unless the store has it.
func ensure(ctx context.Context, st *template.Builder, name string, scale float64, logf func(string, ...any)) (*catalog.Meta, error) {
	f, err := os.CreateTemp(st.Catalog().Root().Path, "bench-fleet-*.sql")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if err := demo.Write(f, demo.Options{Scale: scale}); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	// A stable file name keeps the content hash stable across runs.
	in := filepath.Join(filepath.Dir(f.Name()), name+".sql")
	if err := os.Rename(f.Name(), in); err != nil {
		return nil, err
	}
	defer os.Remove(in)
	logf("building template %s (scale %g) unless it is in the store", name, scale)
	m, _, err := st.Build(ctx, template.BuildOptions{Name: name, FromSQL: in, Profile: mariadb.DefaultProfile(), Workers: 4})
	return m, err
}

// timePull removes the local template and pulls it again; with ready, it
// also starts one server on a clone of it and waits until it answers.
func timePull(ctx context.Context, st *template.Builder, m *catalog.Meta, ref string, remote oci.Remote, ready bool) (float64, error) {
	if err := st.Catalog().Remove(m, nil); err != nil {
		return 0, err
	}
	start := time.Now()
	got, _, err := oci.Pull(ctx, st, ref, oci.PullOptions{Remote: remote})
	if err != nil {
		return 0, err
	}
	if !ready {
		return time.Since(start).Seconds(), nil
	}
	return startOne(ctx, st, got, start)
}

// timeCat reads the pushed blobs from the registry's storage with cat, then
// starts one server on a clone of the template already in the store.
func timeCat(ctx context.Context, st *template.Builder, m *catalog.Meta, reg *localregistry.Registry, layers []ocispec.Descriptor) (float64, error) {
	args := make([]string, len(layers))
	for i, l := range layers {
		args[i] = reg.BlobPath(l.Digest.Encoded())
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "cat", args...)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	cmd.Stdout = devnull
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("cat blobs: %w", err)
	}
	return startOne(ctx, st, m, start)
}

// startOne starts one server on a clone of m and returns the seconds from
// start until it answered; the server is stopped and its clone removed
// after the clock stops.
func startOne(ctx context.Context, st *template.Builder, m *catalog.Meta, start time.Time) (float64, error) {
	r, err := st.Start(ctx, m, fmt.Sprintf("bench-fleet-%d", os.Getpid()))
	if err != nil {
		return 0, fmt.Errorf("start a server on %s: %w", m.Name, err)
	}
	s := time.Since(start).Seconds()
	return s, r.Close()
}

// manifestLayers reads back the layers of a pushed manifest.
func manifestLayers(ctx context.Context, ref string, remote oci.Remote) ([]ocispec.Descriptor, error) {
	man, err := oci.FetchManifest(ctx, ref, remote)
	if err != nil {
		return nil, err
	}
	return man.Layers, nil
}

// timeGet downloads every blob from the registry, 4 at once, and throws the
// bytes away: the transport alone.
func timeGet(ctx context.Context, reg *localregistry.Registry, repoAddr string, layers []ocispec.Descriptor) (float64, error) {
	repo := strings.TrimPrefix(repoAddr, reg.Addr+"/")
	start := time.Now()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, l := range layers {
		g.Go(func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/v2/%s/blobs/%s", reg.Addr, repo, l.Digest), nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET blob %s: %s", l.Digest, resp.Status)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// timeHash computes the SHA-256 of every blob from the page cache, 4 at
// once as a pull verifies them: the verification alone.
func timeHash(ctx context.Context, reg *localregistry.Registry, layers []ocispec.Descriptor) (float64, error) {
	start := time.Now()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, l := range layers {
		g.Go(func() error {
			f, err := os.Open(reg.BlobPath(l.Digest.Encoded()))
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != l.Digest.Encoded() {
				return fmt.Errorf("blob %s hashes to %s", l.Digest, got)
			}
			return ctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// timeWrite copies the blobs into one file beside the templates with cat
// and waits until the filesystem has written it back: the write alone.
func timeWrite(ctx context.Context, st *template.Builder, reg *localregistry.Registry, layers []ocispec.Descriptor) (float64, error) {
	dst := filepath.Join(filepath.Dir(st.Catalog().Dir("x")), fmt.Sprintf(".bench-fleet-%d", os.Getpid()))
	defer os.Remove(dst)
	args := make([]string, len(layers))
	for i, l := range layers {
		args[i] = reg.BlobPath(l.Digest.Encoded())
	}
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "cat", args...)
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("cat blobs: %w", err)
	}
	if err := unix.Syncfs(int(out.Fd())); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}
