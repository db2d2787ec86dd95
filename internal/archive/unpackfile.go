package archive

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// UnpackFile extracts an archive held in a regular file. It reads the end
// record and the trailer index first, so a truncated archive is refused
// before anything is written, then Threads goroutines extract extents in
// any order, each through the best rung of the ladder that works: clone,
// copy_file_range, or pread and pwrite. See Unpack for how dir is treated.
func UnpackFile(ctx context.Context, f *os.File, dir string, opts UnpackOptions) (Stats, error) {
	start := time.Now()
	fi, err := f.Stat()
	if err != nil {
		return Stats{}, fmt.Errorf("unpack: %w", err)
	}
	fu := &fileUnpacker{f: f, size: uint64(fi.Size())}
	pos, err := fu.prologue()
	if err != nil {
		return Stats{}, err
	}
	x, err := newExtractor(dir, opts)
	if err != nil {
		return Stats{}, err
	}
	fu.x = x
	if m, err := unix.Mmap(int(f.Fd()), 0, int(fu.size), unix.PROT_READ, unix.MAP_SHARED); err == nil {
		fu.mapped = m
		defer unix.Munmap(m)
	}
	stop := StartProgress(opts.Progress, "unpack", int64(fu.data), &x.done)
	err = x.setTable(fu.entries)
	if err == nil {
		err = fu.extract(ctx)
	}
	stop()
	if err == nil {
		err = x.finish(pos)
	}
	st := Stats{ArchiveBytes: int64(fu.size)}
	x.stats(&st, start)
	if err != nil {
		x.abort()
		return st, err
	}
	return st, nil
}

type fileUnpacker struct {
	x       *extractor
	f       *os.File
	size    uint64
	mapped  []byte
	entries []entry
	index   []uint64 // positions of data records
	ipos    uint64   // position of the index record
	data    uint64

	noClone, noCopy atomic.Bool
}

func (fu *fileUnpacker) readHeader(pos uint64) (header, error) {
	var b [HeaderSize]byte
	if pos+HeaderSize > fu.size {
		return header{}, corruptf(pos, "archive ends early (truncated)")
	}
	if _, err := fu.f.ReadAt(b[:], int64(pos)); err != nil {
		return header{}, fmt.Errorf("unpack: read archive at %d: %w", pos, err)
	}
	return decodeHeader(b[:], pos)
}

// readPayload reads and verifies a table or index payload.
func (fu *fileUnpacker) readPayload(h *header) ([]byte, error) {
	if h.next() > fu.size {
		return nil, corruptf(h.pos, "archive ends early (truncated)")
	}
	b := make([]byte, h.stored)
	if _, err := fu.f.ReadAt(b, int64(h.payloadPos())); err != nil {
		return nil, fmt.Errorf("unpack: read archive at %d: %w", h.payloadPos(), err)
	}
	if h.stored > 0 && xxh3.Hash(b) != h.hash {
		return nil, corruptf(h.pos, "payload checksum mismatch in %c record", h.typ)
	}
	return b, nil
}

// prologue reads the start record, the file table, the end record and the
// index. It returns the archive size.
func (fu *fileUnpacker) prologue() (uint64, error) {
	a, err := fu.readHeader(0)
	if err != nil {
		return 0, err
	}
	if a.typ != recStart || a.offset != formatVersion {
		return 0, corruptf(0, "archive does not start with a version %d start record", formatVersion)
	}
	fu.data = a.length
	t, err := fu.readHeader(a.next())
	if err != nil {
		return 0, err
	}
	if t.typ != recTable {
		return 0, corruptf(t.pos, "expected the file table, found a %c record", t.typ)
	}
	tb, err := fu.readPayload(&t)
	if err != nil {
		return 0, err
	}
	if fu.entries, err = decodeTable(tb); err != nil {
		return 0, &CorruptError{Offset: t.pos, Msg: err.Error()}
	}
	if fu.size < t.next()+2*HeaderSize {
		return 0, corruptf(fu.size, "archive ends early (truncated)")
	}
	z, err := fu.readHeader(fu.size - HeaderSize)
	if err != nil {
		return 0, fmt.Errorf("%w (is the archive truncated?)", err)
	}
	if z.typ != recEnd || z.length != fu.size || z.offset < t.next() {
		return 0, corruptf(z.pos, "bad end record")
	}
	ih, err := fu.readHeader(z.offset)
	if err != nil {
		return 0, err
	}
	if ih.typ != recIndex || ih.next() != z.pos || ih.stored != 8*ih.length {
		return 0, corruptf(ih.pos, "bad index record")
	}
	ib, err := fu.readPayload(&ih)
	if err != nil {
		return 0, err
	}
	fu.ipos = ih.pos
	fu.index = make([]uint64, ih.length)
	for i := range fu.index {
		fu.index[i] = binary.LittleEndian.Uint64(ib[8*i:])
	}
	return fu.size, nil
}

func (fu *fileUnpacker) extract(ctx context.Context) error {
	threads := fu.x.opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	fu.noClone.Store(fu.x.opts.NoClone)
	fu.noCopy.Store(fu.x.opts.NoCopyRange)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf, out []byte
			var dec *zstd.Decoder
			defer func() {
				if dec != nil {
					dec.Close()
				}
			}()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(fu.index)) {
					return
				}
				if err := fu.extent(fu.index[i], &buf, &out, &dec); err != nil {
					cancel(err)
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// extent extracts the data record at pos.
func (fu *fileUnpacker) extent(pos uint64, buf, out *[]byte, dec **zstd.Decoder) error {
	x := fu.x
	h, err := fu.readHeader(pos)
	if err != nil {
		return err
	}
	if h.typ != recData || h.next() > fu.ipos {
		return corruptf(pos, "index points at a bad data record")
	}
	if err := x.checkExtent(&h); err != nil {
		return err
	}
	if err := x.open(h.file); err != nil {
		return err
	}
	dst := x.files[h.file].f
	src := int64(h.payloadPos())
	if h.codec == codecNone {
		done := int64(0)
		n := int64(h.length)
		// Rung 1: clone the block-aligned part.
		if !fu.noClone.Load() && src%Align == 0 && h.offset%Align == 0 && n >= Align {
			cl := n &^ (Align - 1)
			if err := cloneRange(fu.f, src, dst, int64(h.offset), cl); err == nil {
				if x.opts.Verify == VerifyAll && !fu.verifyMapped(&h) {
					return fu.hashErr(&h)
				}
				x.cloned.Add(cl)
				done = cl
			} else if refused(err) {
				fu.noClone.Store(true)
			} else {
				return fmt.Errorf("unpack: clone into %s: %w%s", x.entries[h.file].path, err, diskHint(err))
			}
		}
		// Rung 2: copy_file_range. When payloads must be hashed they are read
		// anyway, and reading into a cached buffer then writing measured
		// faster than copy_file_range plus a hash pass over the mapping, so
		// this rung serves --verify headers (and cloned extents' checks).
		if done < n && !fu.noCopy.Load() && x.opts.Verify == VerifyHeaders {
			k, err := copyRange(fu.f, src+done, dst, int64(h.offset)+done, n-done)
			if err != nil && (k > 0 || !refused(err)) {
				return fmt.Errorf("unpack: copy into %s: %w%s", x.entries[h.file].path, err, diskHint(err))
			}
			if err != nil {
				fu.noCopy.Store(true)
			} else {
				if done == 0 && x.opts.Verify != VerifyHeaders && !fu.verifyMapped(&h) {
					return fu.hashErr(&h)
				}
				x.copied.Add(k)
				done += k
			}
		}
		if done == n {
			return x.extentDone(&h)
		}
		if done > 0 {
			// Only the unaligned tail of a cloned extent is left.
			tail := make([]byte, n-done)
			if _, err := fu.f.ReadAt(tail, src+done); err != nil {
				return fmt.Errorf("unpack: read archive at %d: %w", src+done, err)
			}
			if x.opts.Verify == VerifyAll && !fu.verifyMapped(&h) {
				return fu.hashErr(&h)
			}
			if err := pwriteAll(dst, tail, int64(h.offset)+done); err != nil {
				return err
			}
			x.written.Add(n - done)
			return x.extentDone(&h)
		}
	}
	// Rung 4: read, hash, (decompress), write.
	if uint64(cap(*buf)) < h.stored {
		*buf = make([]byte, h.stored)
	}
	b := (*buf)[:h.stored]
	if _, err := fu.f.ReadAt(b, src); err != nil {
		return fmt.Errorf("unpack: read archive at %d: %w", src, err)
	}
	if x.opts.Verify != VerifyHeaders && xxh3.Hash(b) != h.hash {
		return fu.hashErr(&h)
	}
	return x.writeExtent(&h, b, dec, out)
}

// verifyMapped hashes a payload through the read-only mapping of the
// archive (or a read when the archive could not be mapped).
func (fu *fileUnpacker) verifyMapped(h *header) bool {
	var b []byte
	if fu.mapped != nil {
		b = fu.mapped[h.payloadPos():h.next()]
		unix.Madvise(b, unix.MADV_POPULATE_READ)
	} else {
		b = make([]byte, h.stored)
		if _, err := fu.f.ReadAt(b, int64(h.payloadPos())); err != nil && err != io.EOF {
			return false
		}
	}
	return xxh3.Hash(b) == h.hash
}

func (fu *fileUnpacker) hashErr(h *header) error {
	return &CorruptError{Offset: h.pos, Path: fu.x.entries[h.file].path, Msg: fmt.Sprintf("payload checksum mismatch in extent %d+%d", h.offset, h.length)}
}
