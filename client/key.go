package client

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// ContentKey hashes the files that define a template (migrations,
// fixtures, schema dumps), for TemplateRequest.Key: the same files give
// the same key on every machine, and any change to a name or a byte gives
// another. Each pattern is a file, a directory (every file under it) or a
// filepath.Glob pattern; names are hashed relative to the pattern's base,
// so the key does not depend on where the checkout lives. Extra strings
// (a tool's version, a setting) are hashed too.
func ContentKey(patterns []string, extra ...string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "pristine-content-key-v1\x00")
	for _, e := range extra {
		fmt.Fprintf(h, "extra\x00%s\x00", e)
	}
	n := 0
	for _, pat := range patterns {
		matches, err := filepath.Glob(pat)
		if err != nil {
			return "", fmt.Errorf("content key: pattern %q: %w", pat, err)
		}
		if len(matches) == 0 {
			return "", fmt.Errorf("content key: %q matches no file: name the migrations and fixtures that define the template", pat)
		}
		sort.Strings(matches)
		for _, m := range matches {
			err := filepath.WalkDir(m, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, err := filepath.Rel(filepath.Dir(m), path)
				if err != nil {
					return err
				}
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				defer f.Close()
				fi, err := f.Stat()
				if err != nil {
					return err
				}
				fmt.Fprintf(h, "file\x00%s\x00%d\x00", filepath.ToSlash(rel), fi.Size())
				n++
				_, err = io.Copy(h, f)
				return err
			})
			if err != nil {
				return "", fmt.Errorf("content key: %w", err)
			}
		}
	}
	if n == 0 && len(extra) == 0 {
		return "", fmt.Errorf("content key: no files: name the migrations and fixtures that define the template")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
