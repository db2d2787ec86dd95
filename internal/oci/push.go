package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/template"
)

// DefaultChunkSize is the size of one layer: small enough that a template
// of a few hundred MB moves as several parallel uploads, large enough that
// a 1 GB one is a few dozen requests.
const DefaultChunkSize = 32 << 20

// PushOptions tune Push.
type PushOptions struct {
	Remote
	// Compress compresses extents with zstd (slower to make, smaller to move).
	Compress bool
	// ChunkSize is the size of one layer (default DefaultChunkSize).
	ChunkSize int64
	// Tags are the tags to point at the pushed manifest; default: the
	// reference's tag, else ContentTag.
	Tags []string
	// afterChunk, when set, runs after each chunk is uploaded or found (a
	// test seam for failures mid-upload).
	afterChunk func(i int)
}

// PushStats says what a push moved.
type PushStats struct {
	Ref          string        `json:"ref"`
	Digest       string        `json:"digest"`
	Tags         []string      `json:"tags"`
	ArchiveBytes int64         `json:"archive_bytes"`
	Chunks       int           `json:"chunks"`
	Uploaded     int64         `json:"uploaded_bytes"`
	Skipped      int           `json:"skipped_chunks"` // already in the registry (a resumed push)
	Pack         time.Duration `json:"pack_ns"`
	Elapsed      time.Duration `json:"elapsed_ns"`
}

// Config is the config blob of a template artifact: what a reader needs to
// know before downloading it. It holds no password.
type Config struct {
	Name        string    `json:"name"`
	Hash        string    `json:"hash"`
	Key         string    `json:"key,omitempty"`
	Server      string    `json:"server"`
	Flavor      string    `json:"flavor"`
	LogFileSize int64     `json:"log_file_size"`
	Databases   []string  `json:"databases"`
	Bytes       int64     `json:"bytes"`
	Created     time.Time `json:"created"`
}

// Push uploads template m to the repository of ref. Its archive is packed
// into a file beside the templates (a reflink copy on btrfs and XFS), cut
// into chunks, and the chunks are uploaded in parallel; chunks the registry
// already has are skipped, so a push that failed half way resumes. The
// manifest goes last: a tag never points at a partial upload.
func Push(ctx context.Context, st *template.Builder, m *catalog.Meta, refStr string, opt PushOptions) (PushStats, error) {
	start := time.Now()
	ref, err := ParseRef(refStr)
	if err != nil {
		return PushStats{}, err
	}
	tags := opt.Tags
	if len(tags) == 0 {
		if ref.Reference.Reference != "" {
			tags = []string{ref.Reference.Reference}
		} else {
			tags = []string{ContentTag(m.Name, m.Hash)}
		}
	}
	for _, t := range tags {
		if !tagRe.MatchString(t) {
			return PushStats{}, fmt.Errorf("push template %s: %q is not a valid tag (letters, digits, '_', '.', '-', at most 128)", m.Name, t)
		}
	}
	stats := PushStats{Ref: ref.Repo(), Tags: tags}
	repo, err := opt.repository(ref)
	if err != nil {
		return stats, err
	}
	f, err := packToFile(ctx, st, m, opt.Compress)
	if err != nil {
		return stats, err
	}
	defer func() { f.Close(); os.Remove(f.Name()) }()
	stats.Pack = time.Since(start)
	fi, err := f.Stat()
	if err != nil {
		return stats, err
	}
	stats.ArchiveBytes = fi.Size()
	cs := opt.ChunkSize
	if cs <= 0 {
		cs = DefaultChunkSize
	}
	layers, err := describeChunks(ctx, f, fi.Size(), cs, opt.parallel(), opt.Compress)
	if err != nil {
		return stats, fmt.Errorf("push template %s: %w", m.Name, err)
	}
	stats.Chunks = len(layers)
	opt.logf("pushing template %s (%d MB archive in %d chunks) to %s", m.Name, fi.Size()>>20, len(layers), ref.Repo())
	if err := uploadChunks(ctx, repo, f, layers, opt, &stats); err != nil {
		return stats, explain("push to", ref, err)
	}
	cfg, err := json.Marshal(Config{Name: m.Name, Hash: m.Hash, Key: m.Key, Server: m.Server, Flavor: m.Flavor,
		LogFileSize: m.LogFileSize, Databases: m.Databases, Bytes: m.Bytes, Created: m.Created})
	if err != nil {
		return stats, err
	}
	cfgDesc := content.NewDescriptorFromBytes(ConfigMediaType, cfg)
	if err := pushBlobBytes(ctx, repo, cfgDesc, cfg); err != nil {
		return stats, explain("push to", ref, err)
	}
	man := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       cfgDesc,
		Layers:       layers,
		Annotations: map[string]string{
			ocispec.AnnotationCreated: m.Created.UTC().Format(time.RFC3339),
			ocispec.AnnotationTitle:   m.Name,
			AnnotationName:            m.Name,
			AnnotationHash:            m.Hash,
			AnnotationServer:          m.Server,
			AnnotationFlavor:          m.Flavor,
			AnnotationProfile:         profileKey(m),
			AnnotationArchiveSize:     strconv.FormatInt(fi.Size(), 10),
			AnnotationCompressed:      strconv.FormatBool(opt.Compress),
		},
	}
	if m.Key != "" {
		man.Annotations[AnnotationKey] = m.Key
	}
	mb, err := json.Marshal(man)
	if err != nil {
		return stats, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, mb)
	for _, t := range tags {
		if err := repo.PushReference(ctx, desc, bytesReader(mb), t); err != nil {
			return stats, explain("push to", ref, err)
		}
	}
	stats.Digest = desc.Digest.String()
	stats.Elapsed = time.Since(start)
	return stats, nil
}

// profileKey is the server profile the template was built with, as the
// content hash saw it.
func profileKey(m *catalog.Meta) string { return "log=" + strconv.FormatInt(m.LogFileSize, 10) }

// scratchDir is a hidden directory beside the templates, on their
// filesystem, so archives there are reflinked in and cloned out.
func scratchDir(st *template.Builder) string { return filepath.Dir(st.Catalog().Dir("x")) }

// exportArchive writes template m's archive (template.Builder.Export). A
// test replaces it to push an archive of its own, as anyone who may write
// to a repository can.
var exportArchive = func(ctx context.Context, st *template.Builder, m *catalog.Meta, w io.Writer, opt archive.PackOptions) (archive.Stats, error) {
	return st.Export(ctx, m, w, opt)
}

// packToFile packs template m into a temporary file beside the templates.
func packToFile(ctx context.Context, st *template.Builder, m *catalog.Meta, compress bool) (*os.File, error) {
	f, err := os.CreateTemp(scratchDir(st), ".push-"+m.Hash[:12]+"-*.prsa")
	if err != nil {
		return nil, fmt.Errorf("push template %s: %w", m.Name, err)
	}
	// One thread packs extents in the table's order, so the same template
	// packs to the same bytes and a repeated push finds its chunks there.
	if _, err := exportArchive(ctx, st, m, f, archive.PackOptions{Compress: compress, Threads: 1}); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("push template %s: %w", m.Name, err)
	}
	return f, nil
}

// describeChunks hashes the archive in chunks of cs bytes, in parallel.
func describeChunks(ctx context.Context, f *os.File, size, cs int64, parallel int, compressed bool) ([]ocispec.Descriptor, error) {
	n := int((size + cs - 1) / cs)
	layers := make([]ocispec.Descriptor, n)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i := range n {
		g.Go(func() error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			off := int64(i) * cs
			length := min(cs, size-off)
			h := sha256.New()
			if _, err := io.Copy(h, io.NewSectionReader(f, off, length)); err != nil {
				return fmt.Errorf("hash chunk %d: %w", i, err)
			}
			layers[i] = ocispec.Descriptor{
				MediaType: ChunkMediaType,
				Digest:    digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil)),
				Size:      length,
				Annotations: map[string]string{
					AnnotationChunkOffset: strconv.FormatInt(off, 10),
				},
			}
			if compressed {
				layers[i].Annotations[AnnotationCompressed] = "true"
			}
			return nil
		})
	}
	return layers, g.Wait()
}

// uploadChunks uploads the chunks the registry does not have yet.
func uploadChunks(ctx context.Context, repo *remote.Repository, f *os.File, layers []ocispec.Descriptor, opt PushOptions, stats *PushStats) error {
	var uploaded atomic.Int64
	var skipped atomic.Int32
	var off int64
	offs := make([]int64, len(layers))
	for i, l := range layers {
		offs[i] = off
		off += l.Size
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(opt.parallel())
	var hookMu sync.Mutex
	for i, l := range layers {
		g.Go(func() error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			have, err := repo.Exists(ctx, l)
			if err != nil {
				return fmt.Errorf("chunk %d/%d: %w", i+1, len(layers), err)
			}
			if have {
				skipped.Add(1)
			} else {
				if err := repo.Push(ctx, l, io.NewSectionReader(f, offs[i], l.Size)); err != nil {
					return fmt.Errorf("upload chunk %d/%d (%s): %w", i+1, len(layers), l.Digest, err)
				}
				uploaded.Add(l.Size)
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
	stats.Uploaded, stats.Skipped = uploaded.Load(), int(skipped.Load())
	return err
}

// pushBlobBytes uploads a small blob unless the registry has it.
func pushBlobBytes(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, b []byte) error {
	have, err := repo.Exists(ctx, desc)
	if err != nil || have {
		return err
	}
	return repo.Push(ctx, desc, bytesReader(b))
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
