// Package rootdir confines pristine to one directory, its root. Everything
// pristine creates (templates, slots, the scratch filesystem, its records)
// lives under the root, and pristine deletes, unmounts or kills only what lies
// under it. A root is marked by a file, .pristine-root, that holds a random id;
// a non-empty directory without the marker belongs to someone else and is
// refused.
package rootdir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/errtag"
)

// MarkerName is the file at the top of every root that holds the root's id.
const MarkerName = ".pristine-root"

// ErrNotOwned is returned (wrapped) when a directory does not belong to
// pristine: it is not empty and has no marker, or it is a system directory.
var ErrNotOwned = errors.New("not a pristine root")

// ErrOutside is returned (wrapped) by Check and Join for a path that is not
// strictly inside the root, contains "..", or passes through a symlink.
var ErrOutside = errors.New("outside the pristine root")

// Root is an opened pristine root. Path is absolute and free of symlinks.
type Root struct {
	Path string
	id   string
}

// Default returns the root to use when none is given: $PRISTINE_ROOT, else
// /var/lib/pristine for root, else $HOME/.local/share/pristine. Clients
// find the daemon by the same rule (api.DefaultRoot).
func Default() string { return api.DefaultRoot() }

// Open opens the root at path, creating the directory and its marker when the
// directory is missing or empty. It resolves symlinks in path once, here, so
// Root.Path is the physical location. It refuses "/", system directories, the
// home directory and its ancestors, and an existing non-empty directory
// without the marker.
func Open(path string) (*Root, error) {
	if path == "" {
		return nil, errors.New("open root: empty path; pass --root or set PRISTINE_ROOT")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open root %s: %w", path, err)
	}
	if err := refuseSystem(abs); err != nil {
		return nil, err
	}
	real, err := resolve(abs)
	if err != nil {
		return nil, fmt.Errorf("open root %s: %w", path, err)
	}
	if err := refuseSystem(real); err != nil {
		return nil, err
	}
	if st, err := os.Lstat(real); err == nil && !st.IsDir() {
		return nil, errtag.New(ErrNotOwned, "open root %s: not a directory; pass a directory with --root", real)
	}
	if err := os.MkdirAll(real, 0o755); err != nil {
		return nil, fmt.Errorf("open root %s: %w", real, err)
	}
	id, err := readMarker(real)
	if errors.Is(err, fs.ErrNotExist) {
		id, err = claim(real)
	}
	if err != nil {
		return nil, err
	}
	return &Root{Path: real, id: id}, nil
}

// ID returns the root's random id, as stored in its marker file.
func (r *Root) ID() string { return r.id }

// Data returns the directory under the root that holds templates and slots;
// "pristine scratch up" mounts its filesystem here.
func (r *Root) Data() string { return filepath.Join(r.Path, "data") }

// Join returns the path of elem inside the root. Each element may hold
// several slash-separated names, but none may be empty, ".", ".." or
// absolute. Join does not touch the disk: call Check before destroying what
// the path names.
func (r *Root) Join(elem ...string) (string, error) {
	if len(elem) == 0 {
		return "", fmt.Errorf("join: no path elements: %w", ErrOutside)
	}
	for _, e := range elem {
		if e == "" || filepath.IsAbs(e) {
			return "", fmt.Errorf("join %q: empty or absolute element: %w", e, ErrOutside)
		}
		for _, name := range strings.Split(e, "/") {
			if name == "" || name == "." || name == ".." {
				return "", fmt.Errorf("join %q: element holds %q: %w", e, name, ErrOutside)
			}
		}
	}
	return filepath.Join(append([]string{r.Path}, elem...)...), nil
}

// Check returns nil when path is absolute, strictly inside the root, contains
// no ".." and no component at or below the root is a symlink (components that
// do not exist yet are allowed: the path may name something about to be
// created). It also checks that the root itself has not been replaced by a
// symlink since Open.
func (r *Root) Check(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("check %q: not an absolute path: %w", path, ErrOutside)
	}
	for _, name := range strings.Split(path, "/") {
		if name == ".." {
			return fmt.Errorf("check %s: holds \"..\": %w", path, ErrOutside)
		}
	}
	clean := filepath.Clean(path)
	rel, ok := strings.CutPrefix(clean, r.Path+"/")
	if !ok || rel == "" {
		return fmt.Errorf("check %s: not inside %s: %w", path, r.Path, ErrOutside)
	}
	if real, err := filepath.EvalSymlinks(r.Path); err != nil || real != r.Path {
		return fmt.Errorf("check %s: root %s moved or became a symlink: %w", path, r.Path, ErrOutside)
	}
	cur := r.Path
	for _, name := range strings.Split(rel, "/") {
		cur += "/" + name
		st, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", path, err)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("check %s: %s is a symlink: %w", path, cur, ErrOutside)
		}
	}
	return nil
}

// resolve returns abs with every symlink resolved, also when the tail of abs
// does not exist yet (the existing head is resolved, the rest appended).
func resolve(abs string) (string, error) {
	head, tail := abs, ""
	for {
		real, err := filepath.EvalSymlinks(head)
		if err == nil {
			return filepath.Join(real, tail), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(head)
		if parent == head {
			return "", err
		}
		tail = filepath.Join(filepath.Base(head), tail)
		head = parent
	}
}

// systemDirs are directories that are never a pristine root, even when empty.
var systemDirs = []string{
	"/bin", "/boot", "/dev", "/dev/shm", "/etc", "/home", "/lib", "/lib32", "/lib64",
	"/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys",
	"/tmp", "/usr", "/usr/local", "/var", "/var/lib", "/var/tmp",
}

// refuseSystem refuses "/", the system directories and the home directory
// and its ancestors.
func refuseSystem(abs string) error {
	abs = filepath.Clean(abs)
	refused := abs == "/"
	for _, d := range systemDirs {
		refused = refused || abs == d
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		home = filepath.Clean(home)
		refused = refused || abs == home || strings.HasPrefix(home, abs+"/")
	}
	if refused {
		suggest := filepath.Join(abs, "pristine")
		if abs == "/" {
			suggest = "/var/lib/pristine"
		}
		return errtag.New(ErrNotOwned, "open root %s: a system or home directory cannot be pristine's root; pass a dedicated directory such as %s with --root",
			abs, suggest)
	}
	return nil
}

// readMarker returns the id stored in dir's marker file.
func readMarker(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, MarkerName))
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if !validID(id) {
		return "", errtag.New(ErrNotOwned, "open root %s: marker %s is damaged (want 32 hex digits); restore it or pick another --root",
			dir, MarkerName)
	}
	return id, nil
}

func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// claim writes a marker with a fresh id into dir, which must be empty. The
// marker is written to a temporary file and hard-linked into place, so two
// processes claiming the same directory agree on one id.
func claim(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("open root %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), MarkerName+".tmp") {
			continue // another process is claiming it right now
		}
		if e.Name() == MarkerName {
			return readMarker(dir) // another process claimed it since we looked
		}
		return "", errtag.New(ErrNotOwned, "open root %s: directory is not empty and has no %s marker, so pristine does not own it; pass an empty or new directory with --root",
			dir, MarkerName)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("open root %s: random id: %w", dir, err)
	}
	id := hex.EncodeToString(b[:])
	tmp, err := os.CreateTemp(dir, MarkerName+".tmp*")
	if err != nil {
		return "", fmt.Errorf("open root %s: write marker: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("open root %s: write marker: %w", dir, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("open root %s: write marker: %w", dir, err)
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, MarkerName)); errors.Is(err, fs.ErrExist) {
		return readMarker(dir) // another process claimed it first
	} else if err != nil {
		return "", fmt.Errorf("open root %s: write marker: %w", dir, err)
	}
	return id, nil
}
