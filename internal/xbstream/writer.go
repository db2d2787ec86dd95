package xbstream

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Writer writes xbstream chunks, one file after the other, like
// `mbstream -c`. It exists for tests and for bench-archive when
// mariadb-backup cannot run; it is not tuned.
type Writer struct {
	w     io.Writer
	Chunk int // payload bytes per chunk; 0 means 10 MiB as mariadb-backup
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

func (xw *Writer) head(typ byte, path string) []byte {
	b := append([]byte(Magic), 0, typ)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(path)))
	return append(b, path...)
}

// WriteFile writes data as payload chunks of path, then its end chunk.
func (xw *Writer) WriteFile(path string, data []byte) error {
	size := xw.Chunk
	if size <= 0 {
		size = 10 << 20
	}
	for off := 0; off < len(data); off += size {
		if err := xw.Payload(path, uint64(off), data[off:min(off+size, len(data))]); err != nil {
			return err
		}
	}
	return xw.EOF(path)
}

// Payload writes one 'P' chunk.
func (xw *Writer) Payload(path string, offset uint64, data []byte) error {
	b := xw.head(typePayload, path)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint64(b, offset)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(data))
	if _, err := xw.w.Write(b); err != nil {
		return err
	}
	_, err := xw.w.Write(data)
	return err
}

// Sparse writes one Percona 'S' chunk: for each (skip, len) pair the file
// position advances by skip, then len bytes of data are written.
func (xw *Writer) Sparse(path string, offset uint64, pairs []uint32, data []byte) error {
	b := xw.head(typeSparse, path)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(pairs)/2))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint64(b, offset)
	var m []byte
	for _, v := range pairs {
		m = binary.LittleEndian.AppendUint32(m, v)
	}
	crc := crc32.Update(crc32.ChecksumIEEE(m), crc32.IEEETable, data)
	b = binary.LittleEndian.AppendUint32(b, crc)
	b = append(b, m...)
	if _, err := xw.w.Write(b); err != nil {
		return err
	}
	_, err := xw.w.Write(data)
	return err
}

// EOF writes the end chunk of path.
func (xw *Writer) EOF(path string) error {
	_, err := xw.w.Write(xw.head(typeEOF, path))
	return err
}

// WriteDir writes every regular file under dir, with paths relative to it.
func (xw *Writer) WriteDir(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("xbstream: %w", err)
		}
		return xw.WriteFile(filepath.ToSlash(rel), data)
	})
}
