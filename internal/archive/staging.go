package archive

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Modes of what an extraction creates. pristine sets them itself and never
// takes them from the archive or stream: an archive's mode bits (a setuid
// root copy of /usr/bin/id, a world-writable directory) are ignored, and
// what is extracted belongs to the extracting user, never to an owner the
// input names. A data directory needs nothing more: its server runs as its
// owner (the servers' account is given the tree before it starts).
const (
	// FileMode is the mode of every regular file an extraction creates.
	FileMode os.FileMode = 0o600
	// DirMode is the mode of every directory an extraction creates, the
	// staging directory and so the target included.
	DirMode os.FileMode = 0o700
)

// Staging is a temporary directory beside a target directory. A tree is
// built inside it and renamed to the target by Commit, so a partial
// extraction never sits at the target path: after a crash only a hidden
// ".NAME.unpack-*" directory beside the target is left, never a target that
// looks complete.
type Staging struct {
	target string
	dir    string
}

// NewStaging checks that target is absent or an empty directory and creates
// the temporary directory beside it, on the same filesystem, with mode
// DirMode from the start (never widened: it becomes the target).
func NewStaging(target string) (*Staging, error) {
	target = filepath.Clean(target)
	switch fi, err := os.Lstat(target); {
	case err == nil && !fi.IsDir():
		return nil, fmt.Errorf("%s exists and is not a directory; choose a new path", target)
	case err == nil:
		names, err := readNames(target)
		if err != nil {
			return nil, err
		}
		if len(names) > 0 {
			return nil, fmt.Errorf("%s is not empty; choose a new or empty directory", target)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	// os.MkdirTemp creates the directory 0700, which umask only narrows.
	dir, err := os.MkdirTemp(filepath.Dir(target), "."+filepath.Base(target)+".unpack-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary directory beside %s: %w", target, err)
	}
	return &Staging{target: target, dir: dir}, nil
}

// Dir is the temporary directory to build the tree in.
func (s *Staging) Dir() string { return s.dir }

// Commit optionally flushes the filesystem, then renames the temporary
// directory to the target.
func (s *Staging) Commit(sync bool) error {
	if sync {
		if err := syncfs(s.dir); err != nil {
			return fmt.Errorf("syncfs %s: %w%s", s.dir, err, diskHint(err))
		}
	}
	// unix.Rename, unlike os.Rename, replaces an empty target directory.
	if err := unix.Rename(s.dir, s.target); err != nil {
		return fmt.Errorf("move finished tree into place: %w", err)
	}
	return nil
}

// Abort removes the temporary directory and everything in it.
func (s *Staging) Abort() { os.RemoveAll(s.dir) }

func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if err == io.EOF {
		return nil, nil
	}
	return names, err
}
