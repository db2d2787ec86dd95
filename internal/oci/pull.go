package oci

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/template"
)

// PullOptions tune Pull.
type PullOptions struct {
	Remote
	// Name is the tag to pull when the reference has none: `push` also
	// tags every template with its name, so that is its latest push.
	Name string
	// Key, when set, is the content key the caller trusts the repository
	// to answer for (a fleet cache's content tag; template.ImportOptions.Key):
	// the manifest and the archive's meta.json must claim it, and the
	// template is filed under it. Empty (`template pull`): the claimed key
	// is not trusted and the template is filed under catalog.ImportKey of
	// the manifest's digest.
	Key string
	// Progress receives the import's progress display; nil means none.
	Progress io.Writer
	// afterChunk, when set, runs after each chunk is downloaded (a test
	// seam for failures mid-download).
	afterChunk func(i int)
}

// PullStats says what a pull moved.
type PullStats struct {
	Ref          string        `json:"ref"`
	Digest       string        `json:"digest"`
	ArchiveBytes int64         `json:"archive_bytes"`
	Chunks       int           `json:"chunks"`
	Downloaded   int64         `json:"downloaded_bytes"`
	Reused       int           `json:"reused_chunks"` // verified chunks kept from an interrupted pull
	Present      bool          `json:"present"`       // the template was here already: nothing moved
	Download     time.Duration `json:"download_ns"`
	Import       time.Duration `json:"import_ns"`
	Elapsed      time.Duration `json:"elapsed_ns"`
}

// maxManifest bounds the manifest read from a registry.
const maxManifest = 4 << 20

// Pull downloads the template ref names and adds it to the store through
// the same import `template import` uses. Every chunk is checked against
// its digest; a template built by another server version is refused before
// anything is downloaded. Chunks land in one archive file beside the
// templates (so the import clones extents out of it on btrfs and XFS); an
// interrupted pull keeps the file and the next pull of the same manifest
// reuses the chunks that still match their digests. The template appears
// only when complete. Unless opt.Key vouches for it, the template is filed
// under catalog.ImportKey("oci:" + manifest digest), not under the key its
// manifest claims (see template.ImportOptions).
func Pull(ctx context.Context, st *template.Builder, refStr string, opt PullOptions) (*catalog.Meta, PullStats, error) {
	start := time.Now()
	ref, err := ParseRef(refStr)
	if err != nil {
		return nil, PullStats{}, err
	}
	if ref.Reference.Reference == "" {
		if opt.Name == "" {
			return nil, PullStats{}, fmt.Errorf("pull %s: which template? add :TAG to the reference, or name it: pristine template pull %s NAME", ref.Repo(), ref.Repo())
		}
		ref = ref.WithTag(opt.Name)
	}
	stats := PullStats{Ref: ref.String()}
	repo, err := opt.repository(ref)
	if err != nil {
		return nil, stats, err
	}
	desc, man, err := fetchManifest(ctx, repo, ref)
	if err != nil {
		return nil, stats, err
	}
	stats.Digest = desc.Digest.String()
	stats.Chunks = len(man.Layers)
	name, hash := man.Annotations[AnnotationName], man.Annotations[AnnotationHash]
	if server := man.Annotations[AnnotationServer]; server != st.Binary().Version {
		return nil, stats, fmt.Errorf("pull %s: %w: %s was built by %s but %s is installed here: build it on this runner, or install the same server version",
			ref, catalog.ErrIncompatible, name, server, st.Binary().Version)
	}
	iopt := template.ImportOptions{UnpackOptions: archive.UnpackOptions{Progress: opt.Progress}, Key: opt.Key}
	if opt.Key != "" {
		if hash != opt.Key {
			return nil, stats, fmt.Errorf("pull %s: the manifest claims key %.12s, not the %.12s its tag names: the cache entry is not the template its tag names; push the template again", ref, hash, opt.Key)
		}
	} else {
		// Every chunk is checked against the manifest, and the manifest
		// against its digest: the digest names the archive.
		iopt.Source = "oci:" + desc.Digest.String()
		hash = catalog.ImportKey(iopt.Source)
	}
	if m := localByHash(st, hash); m != nil {
		stats.Present, stats.Elapsed = true, time.Since(start)
		return m, stats, nil
	}
	cleanStale(st)
	dl := filepath.Join(scratchDir(st), ".pull-"+desc.Digest.Encoded()[:16])
	unlock, err := flock(dl + ".lock")
	if err != nil {
		return nil, stats, fmt.Errorf("pull %s: %w", ref, err)
	}
	defer unlock()
	if m := localByHash(st, hash); m != nil { // pulled by someone else meanwhile
		stats.Present, stats.Elapsed = true, time.Since(start)
		return m, stats, nil
	}
	f, err := downloadChunks(ctx, repo, ref, dl, man, opt, &stats)
	if err != nil {
		return nil, stats, err
	}
	stats.Download = time.Since(start)
	importStart := time.Now()
	m, _, err := st.ImportWith(ctx, f, iopt)
	f.Close()
	os.RemoveAll(dl)
	os.Remove(dl + ".lock")
	stats.Import = time.Since(importStart)
	stats.Elapsed = time.Since(start)
	if err != nil {
		return nil, stats, fmt.Errorf("pull %s: %w", ref, err)
	}
	return m, stats, nil
}

// FetchManifest reads the manifest of the template artifact ref names.
func FetchManifest(ctx context.Context, refStr string, r Remote) (*ocispec.Manifest, error) {
	ref, err := ParseRef(refStr)
	if err != nil {
		return nil, err
	}
	repo, err := r.repository(ref)
	if err != nil {
		return nil, err
	}
	_, man, err := fetchManifest(ctx, repo, ref)
	return man, err
}

// fetchManifest resolves ref and reads its manifest, checked against its
// digest, and makes sure it is a pristine template.
func fetchManifest(ctx context.Context, repo *remote.Repository, ref Ref) (ocispec.Descriptor, *ocispec.Manifest, error) {
	desc, rc, err := repo.FetchReference(ctx, ref.Reference.Reference)
	if err != nil {
		if notFound(err) {
			return desc, nil, fmt.Errorf("pull %s: %w: no such tag in the registry (push it first, or check the name)", ref, catalog.ErrNotFound)
		}
		return desc, nil, explain("pull from", ref, err)
	}
	defer rc.Close()
	if desc.Size > maxManifest {
		return desc, nil, fmt.Errorf("pull %s: a manifest of %d bytes is not a pristine template", ref, desc.Size)
	}
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		return desc, nil, fmt.Errorf("pull %s: read manifest: %w", ref, err)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(b, &man); err != nil {
		return desc, nil, fmt.Errorf("pull %s: read manifest: %w", ref, err)
	}
	if man.ArtifactType != ArtifactType && man.Config.MediaType != ConfigMediaType {
		return desc, nil, fmt.Errorf("pull %s: not a pristine template (artifact type %q, config %q): push templates with `pristine template push`", ref, man.ArtifactType, man.Config.MediaType)
	}
	for _, l := range man.Layers {
		if l.MediaType != ChunkMediaType || l.Size < 0 || l.Digest.Validate() != nil || l.Digest.Algorithm() != digest.SHA256 {
			return desc, nil, fmt.Errorf("pull %s: unexpected layer %s (%s): push templates with `pristine template push`", ref, l.Digest, l.MediaType)
		}
	}
	return desc, &man, nil
}

// localByHash returns the template with hash if the store has it.
func localByHash(st *template.Builder, hash string) *catalog.Meta {
	if len(hash) < 32 {
		return nil
	}
	m, err := st.Catalog().Get(hash)
	if err != nil || m.Hash != hash {
		return nil
	}
	return m
}

// downloadChunks fetches the layers into dl/archive at their offsets, in
// parallel, checking each against its digest. Chunks of an interrupted pull
// that still match are kept.
func downloadChunks(ctx context.Context, repo *remote.Repository, ref Ref, dl string, man *ocispec.Manifest, opt PullOptions, stats *PullStats) (*os.File, error) {
	var total int64
	offs := make([]int64, len(man.Layers))
	for i, l := range man.Layers {
		offs[i] = total
		total += l.Size
	}
	if want := man.Annotations[AnnotationArchiveSize]; want != "" && want != strconv.FormatInt(total, 10) {
		return nil, fmt.Errorf("pull %s: the layers add up to %d bytes but the manifest says %s", ref, total, want)
	}
	stats.ArchiveBytes = total
	if err := os.MkdirAll(dl, 0o700); err != nil {
		return nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	f, err := os.OpenFile(filepath.Join(dl, "archive"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	fi, err := f.Stat()
	if err == nil {
		resume := fi.Size() == total && total > 0
		if !resume {
			if err = f.Truncate(0); err == nil {
				err = f.Truncate(total)
			}
		}
		if err == nil {
			err = fetchAll(ctx, repo, f, man.Layers, offs, resume, opt, stats)
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, ErrDigest) {
			os.RemoveAll(dl) // nothing to resume from a registry that serves damage
			return nil, fmt.Errorf("pull %s: %w", ref, err)
		}
		if errors.Is(err, syscall.ENOSPC) {
			os.RemoveAll(dl)
		}
		return nil, explain("pull from", ref, err)
	}
	return f, nil
}

func fetchAll(ctx context.Context, repo *remote.Repository, f *os.File, layers []ocispec.Descriptor, offs []int64, resume bool, opt PullOptions, stats *PullStats) error {
	var downloaded atomic.Int64
	var reused atomic.Int32
	var hookMu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(opt.parallel())
	for i, l := range layers {
		g.Go(func() error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if resume && regionMatches(f, offs[i], l) {
				reused.Add(1)
				return nil
			}
			n, err := fetchChunk(ctx, repo, f, offs[i], l)
			downloaded.Add(n)
			if err != nil {
				return fmt.Errorf("chunk %d/%d (%s): %w", i+1, len(layers), l.Digest, err)
			}
			if opt.afterChunk != nil {
				hookMu.Lock()
				opt.afterChunk(i)
				hookMu.Unlock()
			}
			return nil
		})
	}
	err := g.Wait()
	stats.Downloaded, stats.Reused = downloaded.Load(), int(reused.Load())
	return err
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// fetchChunk downloads one layer into f at off, hashing it on the way.
func fetchChunk(ctx context.Context, repo *remote.Repository, f *os.File, off int64, l ocispec.Descriptor) (int64, error) {
	rc, err := repo.Fetch(ctx, l)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	h := sha256.New()
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	n, err := io.CopyBuffer(io.MultiWriter(io.NewOffsetWriter(f, off), h), io.LimitReader(rc, l.Size+1), *buf)
	if err != nil {
		return n, err
	}
	if n != l.Size {
		return n, fmt.Errorf("%w: the registry sent %d bytes, the manifest says %d", ErrDigest, n, l.Size)
	}
	if got := digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil)); got != l.Digest {
		return n, fmt.Errorf("%w: the registry served bytes whose digest is %s: the blob is damaged in the registry; push the template again", ErrDigest, got)
	}
	// Start writing the chunk back now, while other chunks download: the
	// import clones extents out of this file (FICLONERANGE), and btrfs and
	// XFS write dirty ranges back before cloning them, so otherwise the
	// whole archive is written back in one go after the download.
	_ = unix.SyncFileRange(int(f.Fd()), off, l.Size, unix.SYNC_FILE_RANGE_WRITE)
	return n, nil
}

// regionMatches reports whether f already holds layer l at off.
func regionMatches(f *os.File, off int64, l ocispec.Descriptor) bool {
	h := sha256.New()
	if n, err := io.Copy(h, io.NewSectionReader(f, off, l.Size)); err != nil || n != l.Size {
		return false
	}
	return digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil)) == l.Digest
}

// flock takes an exclusive lock on path, waiting for another holder.
func flock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// staleAfter is how long an interrupted download waits to be resumed, and
// a killed push's archive file to be noticed, before the next pull removes it.
const staleAfter = 24 * time.Hour

// cleanStale removes downloads no pull has resumed for a day (unless a
// pull holds them) and archive files a killed push left.
func cleanStale(st *template.Builder) {
	dir := scratchDir(st)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, ".pull-") && !strings.HasPrefix(name, ".push-") || strings.HasSuffix(name, ".lock") {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		p := filepath.Join(dir, name)
		if e.IsDir() {
			f, err := os.OpenFile(p+".lock", os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				continue
			}
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				os.RemoveAll(p)
				os.Remove(p + ".lock")
			}
			f.Close()
			continue
		}
		os.Remove(p)
	}
}
