package sqlload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// A Source is one stream of SQL input.
type Source struct {
	// Name is what errors print before the line number: a file path, or
	// "stdin".
	Name string
	// Open opens the stream. Load decompresses gzip and zstd streams,
	// recognised by their first bytes, whatever the name says.
	Open func() (io.ReadCloser, error)
}

// Suffixes of the files Sources takes from a directory.
var sqlSuffixes = []string{".sql", ".sql.gz", ".sql.zst"}

// Sources returns the sources a path names: "-" is standard input, a file is
// itself (plain, gzip or zstd), and a directory is its *.sql, *.sql.gz and
// *.sql.zst files in lexical order of their names. An entry of a directory
// with such a name that is not a regular file is skipped, and said so to
// skipped (when not nil) with its path and why: a symlink is not followed
// (the directory's SQL is what lies in it), a directory or a device is no
// SQL file.
func Sources(path string, skipped func(path, why string)) ([]Source, error) {
	if path == "-" {
		return []Source{{Name: "stdin", Open: func() (io.ReadCloser, error) {
			return io.NopCloser(os.Stdin), nil
		}}}, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sql input: %w", err)
	}
	if !st.IsDir() {
		return []Source{fileSource(path)}, nil
	}
	ents, err := os.ReadDir(path) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("sql input: %w", err)
	}
	var out []Source
	for _, e := range ents {
		if !hasSQLSuffix(e.Name()) {
			continue
		}
		file := filepath.Join(path, e.Name())
		switch {
		case e.Type().IsRegular():
			out = append(out, fileSource(file))
		case skipped == nil:
		case e.Type()&fs.ModeSymlink != 0:
			skipped(file, "a symlink in a --from-sql directory is not followed: copy the file into the directory, or pass it as --from-sql itself")
		default:
			skipped(file, "not a regular file")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sql input: directory %s has no .sql, .sql.gz or .sql.zst files (symlinks are not followed)", path)
	}
	return out, nil
}

func hasSQLSuffix(name string) bool {
	for _, s := range sqlSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func fileSource(path string) Source {
	return Source{Name: path, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

// StringSource is a source that reads s; tests and generated SQL use it.
func StringSource(name, s string) Source {
	return Source{Name: name, Open: func() (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(s)), nil
	}}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// decompress returns the SQL text of a raw stream: the stream itself, or
// its gzip or zstd content. The returned function releases the decoder.
func decompress(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return z, func() { z.Close() }, nil
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return z, z.Close, nil
	}
	return br, func() {}, nil
}
