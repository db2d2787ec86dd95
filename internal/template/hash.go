package template

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// hashVersion changes whenever the way pristine builds templates changes, so
// old templates are not mistaken for new ones.
const hashVersion = "pristine-template-v1"

// Hasher accumulates the content hash of a template's inputs.
type Hasher struct{ h hash.Hash }

// NewHasher starts a hash with pristine's format version.
func NewHasher() *Hasher {
	x := &Hasher{h: sha256.New()}
	x.Field("format", hashVersion)
	return x
}

// Field adds a named value, length-prefixed so fields never run together.
func (x *Hasher) Field(name, value string) {
	fmt.Fprintf(x.h, "%d:%s=%d:%s\n", len(name), name, len(value), value)
}

// Path adds a file, or every regular file below a directory in lexical
// order, by relative name and content.
func (x *Hasher) Path(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("hash input %s: %w", path, err)
	}
	if !st.IsDir() {
		return x.file(filepath.Base(path), path)
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("hash input %s: %w", path, err)
	}
	sort.Strings(files)
	for _, f := range files {
		rel, _ := filepath.Rel(path, f)
		if err := x.file(rel, f); err != nil {
			return err
		}
	}
	return nil
}

func (x *Hasher) file(name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hash input %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(x.h, "file:%s:%d\n", name, st.Size())
	if _, err := io.Copy(x.h, f); err != nil {
		return fmt.Errorf("hash input %s: %w", path, err)
	}
	return nil
}

// Sum returns the hash as 64 hex digits.
func (x *Hasher) Sum() string { return hex.EncodeToString(x.h.Sum(nil)) }
