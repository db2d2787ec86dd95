package archive

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"
)

// Unpack extracts the archive read from r into dir, which must not exist or
// be an empty directory. The tree is built in a temporary directory beside
// dir and renamed to dir only after the end record has been read and every
// extent written and checked; on any error the temporary directory is
// removed and dir is left as it was.
//
// When r is a regular *os.File, Unpack calls UnpackFile. Otherwise one
// goroutine reads records in stream order, hashing payloads as they arrive,
// and Threads goroutines decompress and pwrite them.
func Unpack(ctx context.Context, r io.Reader, dir string, opts UnpackOptions) (Stats, error) {
	if f, ok := r.(*os.File); ok && isRegular(f) {
		return UnpackFile(ctx, f, dir, opts)
	}
	start := time.Now()
	x, err := newExtractor(dir, opts)
	if err != nil {
		return Stats{}, err
	}
	stop := StartProgress(opts.Progress, "unpack", 0, &x.done)
	su := &streamUnpacker{x: x, r: r}
	if f, ok := r.(*os.File); ok && isPipe(f) {
		GrowPipe(f)
		if opts.Verify == VerifyHeaders {
			su.pipe = f
		}
	}
	err = su.run(ctx)
	stop()
	if err == nil {
		err = x.finish(su.pos)
	}
	var st Stats
	st.ArchiveBytes = int64(su.pos)
	x.stats(&st, start)
	if err != nil {
		x.abort()
		return st, err
	}
	return st, nil
}

// streamUnpacker reads an archive sequentially.
type streamUnpacker struct {
	x    *extractor
	r    io.Reader
	pipe *os.File // set when payloads may be spliced
	pos  uint64
	hdr  [HeaderSize]byte
	pad  []byte
}

type job struct {
	h   header
	buf []byte
}

func (su *streamUnpacker) read(b []byte) error {
	n, err := io.ReadFull(su.r, b)
	su.pos += uint64(n)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return corruptf(su.pos, "archive ends early (truncated)")
	}
	if err != nil {
		return fmt.Errorf("unpack: read archive: %w", err)
	}
	return nil
}

func (su *streamUnpacker) header() (header, error) {
	pos := su.pos
	if err := su.read(su.hdr[:]); err != nil {
		return header{}, err
	}
	h, err := decodeHeader(su.hdr[:], pos)
	if err != nil {
		return h, err
	}
	if su.pad == nil {
		su.pad = make([]byte, maxPad)
	}
	return h, su.read(su.pad[:h.pad])
}

// payload reads h's payload into buf (grown as needed), hashing it in
// cache-sized pieces as it arrives.
func (su *streamUnpacker) payload(h *header, buf []byte, verify bool) ([]byte, error) {
	if uint64(cap(buf)) < h.stored {
		buf = make([]byte, h.stored)
	}
	buf = buf[:h.stored]
	hs := xxh3.New()
	const piece = 256 << 10
	for i := 0; i < len(buf); i += piece {
		p := buf[i:min(i+piece, len(buf))]
		if err := su.read(p); err != nil {
			return buf, err
		}
		if verify {
			hs.Write(p)
		}
	}
	if verify && h.stored > 0 && hs.Sum64() != h.hash {
		return buf, su.hashErr(h)
	}
	return buf, nil
}

func (su *streamUnpacker) hashErr(h *header) error {
	e := &CorruptError{Offset: h.pos, Msg: "payload checksum mismatch"}
	if h.typ == recData && int(h.file) < len(su.x.entries) {
		e.Path = su.x.entries[h.file].path
		e.Msg = fmt.Sprintf("payload checksum mismatch in extent %d+%d", h.offset, h.length)
	}
	return e
}

func (su *streamUnpacker) run(ctx context.Context) error {
	x := su.x
	h, err := su.header()
	if err != nil {
		return err
	}
	if h.typ != recStart || h.offset != formatVersion {
		return corruptf(0, "archive does not start with a version %d start record", formatVersion)
	}
	if h, err = su.header(); err != nil {
		return err
	}
	if h.typ != recTable {
		return corruptf(h.pos, "expected the file table, found a %c record", h.typ)
	}
	tb, err := su.payload(&h, nil, true)
	if err != nil {
		return err
	}
	es, err := decodeTable(tb)
	if err != nil {
		return &CorruptError{Offset: h.pos, Msg: err.Error()}
	}
	if err := x.setTable(es); err != nil {
		return err
	}

	threads := x.opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan job, threads)
	free := make(chan []byte, threads+2)
	for range threads + 2 {
		free <- nil
	}
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dec *zstd.Decoder
			var out []byte
			for j := range jobs {
				if ctx.Err() == nil {
					if err := x.writeExtent(&j.h, j.buf, &dec, &out); err != nil {
						cancel(err)
					}
				}
				free <- j.buf
			}
			if dec != nil {
				dec.Close()
			}
		}()
	}
	err = su.records(ctx, jobs, free)
	close(jobs)
	wg.Wait()
	if err == nil {
		err = context.Cause(ctx)
	}
	return err
}

// records reads data records up to the end record and hands them out.
func (su *streamUnpacker) records(ctx context.Context, jobs chan<- job, free chan []byte) error {
	x := su.x
	verify := x.opts.Verify != VerifyHeaders
	var data uint64
	for {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		h, err := su.header()
		if err != nil {
			return err
		}
		switch h.typ {
		case recData:
			if err := x.checkExtent(&h); err != nil {
				return err
			}
			data++
			if su.pipe != nil && h.codec == codecNone {
				if err := su.splice(&h); err != nil {
					return err
				}
				continue
			}
			buf, err := su.payload(&h, <-free, verify)
			if err != nil {
				free <- buf
				return err
			}
			jobs <- job{h: h, buf: buf}
		case recIndex:
			b, err := su.payload(&h, nil, true)
			if err != nil {
				return err
			}
			if h.length != data || uint64(len(b)) != 8*data {
				return corruptf(h.pos, "index lists %d records, the archive has %d", h.length, data)
			}
			ipos := h.pos
			if h, err = su.header(); err != nil {
				return err
			}
			if h.typ != recEnd || h.offset != ipos || h.length != su.pos {
				return corruptf(h.pos, "bad end record")
			}
			return nil
		default:
			return corruptf(h.pos, "unexpected %c record", h.typ)
		}
	}
}

// splice moves a payload from the input pipe straight into its file.
func (su *streamUnpacker) splice(h *header) error {
	x := su.x
	if err := x.open(h.file); err != nil {
		return err
	}
	n, err := spliceRange(su.pipe, x.files[h.file].f, int64(h.offset), int64(h.length))
	su.pos += uint64(n)
	if err != nil {
		return fmt.Errorf("unpack: splice into %s: %w%s", x.entries[h.file].path, err, diskHint(err))
	}
	if uint64(n) < h.length {
		return corruptf(su.pos, "archive ends early (truncated)")
	}
	x.spliced.Add(n)
	return x.extentDone(h)
}

// writeExtent decompresses (if needed) and writes one payload held in
// memory; it is the last rung of the ladder.
func (x *extractor) writeExtent(h *header, buf []byte, dec **zstd.Decoder, out *[]byte) error {
	data := buf
	if h.codec == codecZstd {
		if *dec == nil {
			*dec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxExtent))
		}
		if uint64(cap(*out)) < h.length {
			*out = make([]byte, 0, h.length)
		}
		d, err := (*dec).DecodeAll(buf, (*out)[:0])
		if err != nil || uint64(len(d)) != h.length {
			return &CorruptError{Offset: h.pos, Path: x.entries[h.file].path, Msg: fmt.Sprintf("zstd extent does not decode to %d bytes", h.length)}
		}
		data = d
	}
	if err := x.open(h.file); err != nil {
		return err
	}
	if err := pwriteAll(x.files[h.file].f, data, int64(h.offset)); err != nil {
		return err
	}
	x.written.Add(int64(len(data)))
	return x.extentDone(h)
}
