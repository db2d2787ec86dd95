// Package archive reads and writes pristine's archive format for data
// directories: a file table declared once, then offset-addressed extent
// records whose payloads sit 4 KiB-aligned in the archive, so that an archive
// on the same reflink filesystem extracts by cloning, and a stream extracts
// with several goroutines and no global lock. docs/archive-format.md is the
// specification; this file holds its constants and the record header codec.
package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Record types.
const (
	recStart = 'A' // first record: format version and total data bytes
	recTable = 'T' // the file table
	recData  = 'D' // one extent of one file
	recIndex = 'X' // trailer index of all data records
	recEnd   = 'Z' // last record: where the index is, total archive size
)

// Codecs of a record payload.
const (
	codecNone = 0
	codecZstd = 1
)

const (
	// HeaderSize is the fixed size of every record header.
	HeaderSize = 64
	// Align is the archive alignment of uncompressed data payloads.
	Align = 4096
	// MaxExtent is the largest raw or stored payload of a data record a
	// reader accepts; writers never exceed it.
	MaxExtent = 16 << 20
	// DefaultExtent is the extent size Pack uses unless told otherwise.
	DefaultExtent = 4 << 20
	// maxPad bounds the padding between a header and its payload.
	maxPad = 64 << 10
	// maxTable bounds the encoded file table (and the index).
	maxTable = 1 << 30
	// formatVersion is written in the start record.
	formatVersion = 1
)

var magic = [4]byte{'P', 'R', 'S', 'A'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error about bytes that do not form a valid
// archive: bad checksums, impossible fields, truncation.
var ErrCorrupt = errors.New("corrupt archive")

// header is one decoded record header. On the wire (little endian):
//
//	0  magic "PRSA"   4  type   5  codec   6  flags u16
//	8  file id u32   12  pad u32
//	16 offset u64    24 length u64   32 stored u64
//	40 pos u64       48 hash u64 (XXH3-64 of the stored payload)
//	56 reserved u32  60 CRC32C of bytes 0..59
type header struct {
	typ    byte
	codec  byte
	flags  uint16
	file   uint32
	pad    uint32
	offset uint64 // data: offset in the file; start: format version; end: index position
	length uint64 // data: raw bytes; start: total data bytes; index: record count; end: archive size
	stored uint64 // payload bytes in the archive
	pos    uint64 // archive offset of this header
	hash   uint64
}

func (h *header) encode(b []byte) {
	_ = b[HeaderSize-1]
	copy(b[0:4], magic[:])
	b[4] = h.typ
	b[5] = h.codec
	binary.LittleEndian.PutUint16(b[6:], h.flags)
	binary.LittleEndian.PutUint32(b[8:], h.file)
	binary.LittleEndian.PutUint32(b[12:], h.pad)
	binary.LittleEndian.PutUint64(b[16:], h.offset)
	binary.LittleEndian.PutUint64(b[24:], h.length)
	binary.LittleEndian.PutUint64(b[32:], h.stored)
	binary.LittleEndian.PutUint64(b[40:], h.pos)
	binary.LittleEndian.PutUint64(b[48:], h.hash)
	binary.LittleEndian.PutUint32(b[56:], 0)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
}

// decodeHeader checks and decodes the header in b, read at archive offset
// pos. It checks everything that can be checked without the payload.
func decodeHeader(b []byte, pos uint64) (header, error) {
	var h header
	if len(b) < HeaderSize {
		return h, corruptf(pos, "short header")
	}
	if [4]byte(b[0:4]) != magic {
		if pos == 0 {
			return h, fmt.Errorf("not a pristine archive (no %q magic at offset 0): %w", magic[:], ErrCorrupt)
		}
		return h, corruptf(pos, "bad record magic")
	}
	if got, want := crc32.Checksum(b[:60], castagnoli), binary.LittleEndian.Uint32(b[60:]); got != want {
		return h, corruptf(pos, "record header checksum mismatch (crc32c %08x, header says %08x)", got, want)
	}
	h = header{
		typ:    b[4],
		codec:  b[5],
		flags:  binary.LittleEndian.Uint16(b[6:]),
		file:   binary.LittleEndian.Uint32(b[8:]),
		pad:    binary.LittleEndian.Uint32(b[12:]),
		offset: binary.LittleEndian.Uint64(b[16:]),
		length: binary.LittleEndian.Uint64(b[24:]),
		stored: binary.LittleEndian.Uint64(b[32:]),
		pos:    binary.LittleEndian.Uint64(b[40:]),
		hash:   binary.LittleEndian.Uint64(b[48:]),
	}
	if h.pos != pos {
		return h, corruptf(pos, "record says it belongs at offset %d", h.pos)
	}
	if h.pad > maxPad {
		return h, corruptf(pos, "padding %d exceeds %d", h.pad, maxPad)
	}
	if h.codec != codecNone && h.codec != codecZstd {
		return h, corruptf(pos, "unknown codec %d", h.codec)
	}
	switch h.typ {
	case recStart, recEnd:
		if h.stored != 0 {
			return h, corruptf(pos, "%c record with a payload", h.typ)
		}
	case recTable, recIndex:
		if h.stored > maxTable || h.length > maxTable {
			return h, corruptf(pos, "%c record of %d bytes is too large", h.typ, h.stored)
		}
	case recData:
		if h.length > MaxExtent || h.stored > MaxExtent {
			return h, corruptf(pos, "extent of %d bytes exceeds %d", h.length, MaxExtent)
		}
		if h.codec == codecNone && h.stored != h.length {
			return h, corruptf(pos, "stored extent with length %d but %d payload bytes", h.length, h.stored)
		}
		if h.offset+h.length < h.offset {
			return h, corruptf(pos, "extent offset overflows")
		}
	default:
		return h, corruptf(pos, "unknown record type 0x%02x", h.typ)
	}
	return h, nil
}

// payloadPos is the archive offset of the record's payload.
func (h *header) payloadPos() uint64 { return h.pos + HeaderSize + uint64(h.pad) }

// next is the archive offset of the following record.
func (h *header) next() uint64 { return h.payloadPos() + h.stored }

// padFor returns the padding that puts a payload starting after a header at
// pos on an Align boundary.
func padFor(pos uint64) uint32 {
	end := pos + HeaderSize
	return uint32((Align - end%Align) % Align)
}

// CorruptError describes damage found at one archive offset, and names the
// file the damaged record belongs to when that is known.
type CorruptError struct {
	Offset uint64 // archive offset of the damaged record
	Path   string // file the record belongs to, if known
	Msg    string
}

func (e *CorruptError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("corrupt archive at offset %d (file %s): %s", e.Offset, e.Path, e.Msg)
	}
	return fmt.Sprintf("corrupt archive at offset %d: %s", e.Offset, e.Msg)
}

// Unwrap lets errors.Is(err, ErrCorrupt) match.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corruptf(pos uint64, format string, args ...any) error {
	return &CorruptError{Offset: pos, Msg: fmt.Sprintf(format, args...)}
}
