package archive

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// PackOptions tune Pack. The zero value is ready to use.
type PackOptions struct {
	// Compress stores each extent as an independent zstd frame (fastest
	// level) when that makes it smaller. Compressed extents cannot be cloned.
	Compress bool
	// Threads read, hash and compress extents in parallel; 0 means GOMAXPROCS.
	Threads int
	// ExtentSize is the largest extent in bytes; 0 means DefaultExtent. It is
	// rounded down to a multiple of Align and capped at MaxExtent.
	ExtentSize int64
	// Progress, when set, receives a progress line a few times a second.
	Progress io.Writer
	// Replace gives the content of regular files (by slash-separated path
	// relative to the directory) to pack instead of what is on disk: an
	// export's meta.json without its secrets. The file keeps its mode and
	// time.
	Replace map[string][]byte
}

// Stats describe one Pack or Unpack.
type Stats struct {
	Files        int           `json:"files"`
	Dirs         int           `json:"dirs"`
	Symlinks     int           `json:"symlinks"`
	Skipped      []string      `json:"skipped,omitempty"` // sockets, FIFOs, devices left out by Pack
	Extents      int           `json:"extents"`
	DataBytes    int64         `json:"data_bytes"`    // file bytes moved
	ArchiveBytes int64         `json:"archive_bytes"` // archive bytes written or read
	Cloned       int64         `json:"cloned_bytes"`  // Unpack: bytes shared by FICLONERANGE
	Copied       int64         `json:"copied_bytes"`  // Unpack: bytes moved by copy_file_range
	Spliced      int64         `json:"spliced_bytes"` // Unpack: bytes moved by splice
	Written      int64         `json:"written_bytes"` // Unpack: bytes written with pwrite
	Elapsed      time.Duration `json:"elapsed_ns"`
}

// Pack writes the directory dir to w as an archive. The file table comes
// first, then one record per data extent in whatever order the threads
// finish, then the trailer index. When w is an *os.File, uncompressed
// payloads go from the page cache to w with copy_file_range (a reflink on
// XFS and btrfs) or sendfile (pipes, sockets) instead of passing through
// user space. dir must not change while it is packed; a file that shrinks is
// reported as an error.
func Pack(ctx context.Context, dir string, w io.Writer, opts PackOptions) (Stats, error) {
	start := time.Now()
	ext := opts.ExtentSize
	if ext <= 0 {
		ext = DefaultExtent
	}
	ext = min(ext/Align*Align, MaxExtent)
	if ext == 0 {
		ext = Align
	}
	sc, err := scan(dir, ext, opts.Replace)
	if err != nil {
		return Stats{}, fmt.Errorf("pack: %w", err)
	}
	st := Stats{Skipped: sc.skipped, Extents: len(sc.extents), DataBytes: int64(sc.data)}
	for i := range sc.entries {
		switch sc.entries[i].kind {
		case kindFile:
			st.Files++
		case kindDir:
			st.Dirs++
		case kindSymlink:
			st.Symlinks++
		}
	}
	pw := &packWriter{w: w, base: -1}
	if f, ok := w.(*os.File); ok {
		pw.out = f
		GrowPipe(f)
		if off, err := f.Seek(0, io.SeekCurrent); err == nil {
			pw.base = off
		}
	}
	var done atomic.Int64
	stop := StartProgress(opts.Progress, "pack", int64(sc.data), &done)
	defer stop()

	if err := pw.record(header{typ: recStart, file: sc.rootMod, offset: formatVersion, length: sc.data}, nil); err != nil {
		return st, err
	}
	table := encodeTable(sc.entries)
	if err := pw.record(header{typ: recTable, length: uint64(len(table))}, table); err != nil {
		return st, err
	}

	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan extent)
	ready := make(chan *packed, threads)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var enc *zstd.Encoder
			if opts.Compress {
				enc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
				defer enc.Close()
			}
			for x := range jobs {
				p, err := prepare(dir, &sc.entries[x.file], x, enc, opts.Replace)
				if err != nil {
					cancel(err)
					continue
				}
				select {
				case ready <- p:
				case <-ctx.Done():
					p.release()
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, x := range sc.extents {
			select {
			case jobs <- x:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(ready) }()

	for p := range ready {
		if ctx.Err() == nil {
			if err := pw.data(p); err != nil {
				cancel(err)
			}
			done.Add(int64(p.x.length))
		}
		p.release()
	}
	if ctx.Err() != nil {
		return st, fmt.Errorf("pack %s: %w", dir, context.Cause(ctx))
	}
	if err := pw.finish(); err != nil {
		return st, err
	}
	st.ArchiveBytes = int64(pw.pos)
	st.Elapsed = time.Since(start)
	return st, nil
}

// packed is an extent ready to be written: either bytes in memory, or a
// mapped range of the source file that can also be sent from its fd.
type packed struct {
	x      extent
	codec  byte
	hash   uint64
	buf    []byte   // payload when it is in memory (compressed)
	src    *os.File // source file for zero-copy sends
	mapped []byte   // the source range, mapped read-only
	mapOff int      // offset of the payload inside mapped
}

func (p *packed) payload() []byte {
	if p.buf != nil {
		return p.buf
	}
	return p.mapped[p.mapOff : p.mapOff+int(p.x.length)]
}

func (p *packed) release() {
	if p.mapped != nil {
		unix.Munmap(p.mapped)
		p.mapped = nil
	}
	if p.src != nil {
		p.src.Close()
		p.src = nil
	}
}

// prepare maps one extent of a source file, hashes it and, when asked,
// compresses it.
func prepare(dir string, e *entry, x extent, enc *zstd.Encoder, replace map[string][]byte) (*packed, error) {
	if b, ok := replace[e.path]; ok {
		p := &packed{x: x, buf: b[x.offset : x.offset+x.length]}
		p.hash = xxh3.Hash(p.buf)
		return p, nil
	}
	name := filepath.Join(dir, filepath.FromSlash(e.path))
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	p := &packed{x: x, src: f}
	fi, err := f.Stat()
	if err != nil {
		p.release()
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if uint64(fi.Size()) < x.offset+x.length {
		p.release()
		return nil, fmt.Errorf("%s shrank from %d to %d bytes while being packed; pack a stopped data directory", name, e.size, fi.Size())
	}
	base := x.offset &^ (uint64(os.Getpagesize()) - 1)
	p.mapOff = int(x.offset - base)
	p.mapped, err = unix.Mmap(int(f.Fd()), int64(base), p.mapOff+int(x.length), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		p.release()
		return nil, fmt.Errorf("map %s: %w", name, err)
	}
	data := p.payload()
	if enc != nil {
		c := enc.EncodeAll(data, make([]byte, 0, len(data)))
		if len(c) < len(data)-len(data)/64 {
			p.buf, p.codec = c, codecZstd
		}
	}
	p.hash = xxh3.Hash(p.payload())
	return p, nil
}

// packWriter owns the output and the archive position.
type packWriter struct {
	w     io.Writer
	out   *os.File // w as a file, for zero-copy sends
	pos   uint64
	index []byte
	count uint64
	hdr   [HeaderSize]byte
	noCFR bool  // copy_file_range refused once: do not retry
	noSF  bool  // sendfile refused once
	base  int64 // offset of the archive start in out, -1 when out cannot seek
}

var zeros [Align]byte

func (pw *packWriter) write(b []byte) error {
	n, err := pw.w.Write(b)
	pw.pos += uint64(n)
	if err != nil {
		return fmt.Errorf("pack: write archive: %w", err)
	}
	return nil
}

// record writes a header, its padding and an in-memory payload.
func (pw *packWriter) record(h header, payload []byte) error {
	h.pos = pw.pos
	h.stored = uint64(len(payload))
	if len(payload) > 0 {
		h.hash = xxh3.Hash(payload)
	}
	return pw.writeHeader(&h, payload)
}

func (pw *packWriter) writeHeader(h *header, payload []byte) error {
	h.encode(pw.hdr[:])
	if err := pw.write(pw.hdr[:]); err != nil {
		return err
	}
	if h.pad > 0 {
		if err := pw.write(zeros[:h.pad]); err != nil {
			return err
		}
	}
	if payload != nil {
		return pw.write(payload)
	}
	return nil
}

// data writes one extent record.
func (pw *packWriter) data(p *packed) error {
	h := header{typ: recData, codec: p.codec, file: p.x.file, offset: p.x.offset, length: p.x.length, pos: pw.pos, hash: p.hash}
	payload := p.payload()
	h.stored = uint64(len(payload))
	if p.codec == codecNone && p.x.length >= Align {
		h.pad = padFor(pw.pos)
	}
	pw.index = binary.LittleEndian.AppendUint64(pw.index, h.pos)
	pw.count++
	if p.buf != nil || pw.out == nil {
		return pw.writeHeader(&h, payload)
	}
	if err := pw.writeHeader(&h, nil); err != nil {
		return err
	}
	return pw.send(p, payload)
}

// send moves an uncompressed payload from the source file to the output
// without copying it through user space when the kernel allows it.
func (pw *packWriter) send(p *packed, payload []byte) error {
	src := int(p.src.Fd())
	dst := int(pw.out.Fd())
	off := int64(p.x.offset)
	left := int(p.x.length)
	for left > 0 && !(pw.noCFR && pw.noSF) {
		var n int
		var err error
		if !pw.noCFR && pw.base >= 0 {
			dpos := pw.base + int64(pw.pos)
			n, err = unix.CopyFileRange(src, &off, dst, &dpos, left, 0)
			if err != nil || n == 0 {
				pw.noCFR = true // pipes, sockets, other filesystems
				continue
			}
			if _, err := pw.out.Seek(dpos, io.SeekStart); err != nil {
				return fmt.Errorf("pack: seek archive: %w", err)
			}
		} else {
			n, err = unix.Sendfile(dst, src, &off, left)
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			if err == nil && n == 0 {
				return fmt.Errorf("pack: %s ended early; pack a stopped data directory", p.src.Name())
			}
			if err != nil {
				pw.noSF = true
				continue
			}
		}
		pw.pos += uint64(n)
		left -= n
	}
	if left > 0 {
		return pw.write(payload[len(payload)-left:])
	}
	return nil
}

// finish writes the trailer index and the end record.
func (pw *packWriter) finish() error {
	ipos := pw.pos
	if err := pw.record(header{typ: recIndex, length: pw.count}, pw.index); err != nil {
		return err
	}
	h := header{typ: recEnd, offset: ipos, pos: pw.pos}
	h.length = pw.pos + HeaderSize
	return pw.writeHeader(&h, nil)
}

// GrowPipe raises a pipe's capacity to 1 MiB, so each wakeup moves more.
func GrowPipe(f *os.File) {
	fi, err := f.Stat()
	if err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	}
}
