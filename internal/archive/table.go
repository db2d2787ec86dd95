package archive

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Kinds of file table entries.
const (
	kindFile    = 1
	kindDir     = 2
	kindSymlink = 3
)

// entry is one file table entry. Its index in the table is its file id.
type entry struct {
	kind    byte
	mode    uint32 // permission bits, setuid, setgid and sticky (Unix values)
	mtime   int64  // nanoseconds since the epoch
	size    uint64 // regular files: size in bytes
	extents uint32 // regular files: number of data records
	path    string // slash-separated, relative, clean
	link    string // symlinks: target
}

const maxPath = 4096

// encodeTable serialises the table:
//
//	count u32, then per entry: kind u8, mode u32, mtime i64, size u64,
//	extents u32, pathlen u16, path, linklen u16, link.
func encodeTable(es []entry) []byte {
	n := 4
	for i := range es {
		n += 1 + 4 + 8 + 8 + 4 + 2 + len(es[i].path) + 2 + len(es[i].link)
	}
	b := make([]byte, 0, n)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(es)))
	for i := range es {
		e := &es[i]
		b = append(b, e.kind)
		b = binary.LittleEndian.AppendUint32(b, e.mode)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.mtime))
		b = binary.LittleEndian.AppendUint64(b, e.size)
		b = binary.LittleEndian.AppendUint32(b, e.extents)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.path)))
		b = append(b, e.path...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.link)))
		b = append(b, e.link...)
	}
	return b
}

// decodeTable parses and validates a file table: every path must be
// relative, clean and unique, every parent must be a directory declared
// earlier, and symlinks must stay inside the tree.
func decodeTable(b []byte) ([]entry, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("file table: too short")
	}
	count := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(count) > uint64(len(b))/29 {
		return nil, fmt.Errorf("file table: %d entries cannot fit in %d bytes", count, len(b))
	}
	es := make([]entry, 0, count)
	kinds := make(map[string]byte, count)
	for i := uint32(0); i < count; i++ {
		if len(b) < 27 {
			return nil, fmt.Errorf("file table: entry %d truncated", i)
		}
		e := entry{
			kind:    b[0],
			mode:    binary.LittleEndian.Uint32(b[1:]),
			mtime:   int64(binary.LittleEndian.Uint64(b[5:])),
			size:    binary.LittleEndian.Uint64(b[13:]),
			extents: binary.LittleEndian.Uint32(b[21:]),
		}
		pl := int(binary.LittleEndian.Uint16(b[25:]))
		b = b[27:]
		if len(b) < pl+2 {
			return nil, fmt.Errorf("file table: entry %d truncated", i)
		}
		e.path = string(b[:pl])
		ll := int(binary.LittleEndian.Uint16(b[pl:]))
		b = b[pl+2:]
		if len(b) < ll {
			return nil, fmt.Errorf("file table: entry %d truncated", i)
		}
		e.link = string(b[:ll])
		b = b[ll:]
		if err := checkEntry(&e, kinds); err != nil {
			return nil, fmt.Errorf("file table: entry %d: %w", i, err)
		}
		kinds[e.path] = e.kind
		es = append(es, e)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("file table: %d trailing bytes", len(b))
	}
	if err := checkLinkChains(es); err != nil {
		return nil, fmt.Errorf("file table: %w", err)
	}
	return es, nil
}

// checkLinkChains resolves every symlink through the other symlinks of the
// table, component by component, and refuses one that ends outside the
// tree, such as a link whose lexically harmless target climbs out through
// another link ("a/up/.." where a/up is "..").
func checkLinkChains(es []entry) error {
	links := make(map[string]string)
	for i := range es {
		if es[i].kind == kindSymlink {
			links[es[i].path] = es[i].link
		}
	}
	for p, t := range links {
		if _, err := resolveLink(links, path.Dir(p), t, 0); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// resolveLink resolves target relative to the resolved directory dir,
// expanding symlinks as it meets them, and fails if it climbs above the root.
func resolveLink(links map[string]string, dir, target string, depth int) (string, error) {
	if depth > 40 {
		return "", fmt.Errorf("too many levels of symlinks")
	}
	var stack []string
	if dir != "." {
		stack = strings.Split(dir, "/")
	}
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return "", fmt.Errorf("symlink resolves outside the target directory, refused")
			}
			stack = stack[:len(stack)-1]
			continue
		}
		cur := strings.Join(append(stack[:len(stack):len(stack)], c), "/")
		if t, ok := links[cur]; ok {
			r, err := resolveLink(links, joinOrDot(stack), t, depth+1)
			if err != nil {
				return "", err
			}
			stack = nil
			if r != "." {
				stack = strings.Split(r, "/")
			}
			continue
		}
		stack = append(stack, c)
	}
	return joinOrDot(stack), nil
}

func joinOrDot(parts []string) string {
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

func checkEntry(e *entry, kinds map[string]byte) error {
	if err := CheckPath(e.path); err != nil {
		return err
	}
	if _, dup := kinds[e.path]; dup {
		return fmt.Errorf("%s: listed twice", e.path)
	}
	if dir := path.Dir(e.path); dir != "." && kinds[dir] != kindDir {
		return fmt.Errorf("%s: parent directory %s is not declared before it", e.path, dir)
	}
	if e.mode&^0o7777 != 0 {
		return fmt.Errorf("%s: bad mode %o", e.path, e.mode)
	}
	switch e.kind {
	case kindFile:
		if e.link != "" {
			return fmt.Errorf("%s: regular file with a link target", e.path)
		}
	case kindDir:
		if e.size != 0 || e.extents != 0 || e.link != "" {
			return fmt.Errorf("%s: directory with data", e.path)
		}
	case kindSymlink:
		if e.size != 0 || e.extents != 0 {
			return fmt.Errorf("%s: symlink with data", e.path)
		}
		if err := CheckSymlink(e.path, e.link); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: unknown kind %d", e.path, e.kind)
	}
	return nil
}

// CheckPath refuses archive member paths that could escape the target
// directory: empty, absolute, unclean, containing "..", NUL or too long.
func CheckPath(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("empty path")
	case len(p) > maxPath:
		return fmt.Errorf("path of %d bytes is too long", len(p))
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q: absolute path refused", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q: NUL in path refused", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q: unclean path refused", p)
	case p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
		return fmt.Errorf("%q: path with .. refused", p)
	}
	return nil
}

// CheckSymlink refuses a symlink at p whose target is absolute or resolves
// (lexically) outside the extraction root.
func CheckSymlink(p, target string) error {
	if target == "" || len(target) > maxPath || strings.ContainsRune(target, 0) {
		return fmt.Errorf("%s: bad symlink target", p)
	}
	if strings.HasPrefix(target, "/") {
		return fmt.Errorf("%s: symlink to absolute path %q refused", p, target)
	}
	r := path.Join(path.Dir(p), target)
	if r == ".." || strings.HasPrefix(r, "../") {
		return fmt.Errorf("%s: symlink to %q points outside the target directory, refused", p, target)
	}
	return nil
}

// unixMode converts an fs.FileMode to the table's Unix mode bits, which
// an archive records for information only: extraction sets its own modes
// (FileMode, DirMode).
func unixMode(fm fs.FileMode) uint32 {
	m := uint32(fm.Perm())
	if fm&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if fm&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if fm&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}
