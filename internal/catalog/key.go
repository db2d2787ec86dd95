package catalog

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
	"strconv"
	"strings"
)

// keyVersion changes whenever the way pristine builds templates changes, so
// old templates are not mistaken for new ones.
const keyVersion = "pristine-template-v1"

// Inputs are what a template's content key covers: everything that makes
// its data directory. Two builds with the same inputs make the same
// template, so the second is not run.
type Inputs struct {
	Name string
	// Key is a content key a client computed over its migrations and
	// fixtures, for a template it builds itself through the API.
	Key string
	// Server and Flavor name the server that builds it (its version
	// string and flavor, as mariadb.Binary has them).
	Server, Flavor string
	// Profile is the build profile's key (mariadb.Profile.Key): redo log
	// size and server options.
	Profile    string
	Database   string
	DBsPerSlot int // below 1 counts as 1
	InitCmd    string
	// FromSQL is a file or directory of SQL, hashed by content (file
	// names relative to it); empty for none. Not used for a Live source.
	FromSQL string
	// Watch lists files or directories the init command reads, hashed by
	// path and content.
	Watch []string
	// Live, when set, is the server a template is captured from.
	Live *Live
}

// Live identifies a capture from a live server: the source's identity
// (address, server id, data directory, version), the databases, the method
// and a change marker: @@gtid_binlog_pos when the source keeps a binary
// log, else the capture time, so that a source without one is captured
// again on every build.
type Live struct {
	Source        string
	Databases     []string
	Method        string
	Marker        string
	WithPasswords bool
}

// Key is the content key of a template: 64 hex digits of a SHA-256 over
// in's fields, each named and length-prefixed, and the content of its
// input files. It names the template's directory, so it must never change
// for the same inputs (key_test.go pins it).
//
// A live capture's key has no client key field, and a watch path that
// cannot be read is skipped rather than refused (its build does not read
// it); for other builds it is an error.
func Key(in Inputs) (string, error) {
	x := newHasher()
	x.field("name", in.Name)
	if in.Live == nil {
		x.field("key", in.Key)
	}
	x.field("server", in.Server)
	x.field("flavor", in.Flavor)
	x.field("profile", in.Profile)
	x.field("database", in.Database)
	x.field("dbs-per-slot", strconv.Itoa(max(in.DBsPerSlot, 1)))
	x.field("init-cmd", in.InitCmd)
	if l := in.Live; l != nil {
		x.field("source", l.Source)
		x.field("databases", strings.Join(l.Databases, ","))
		x.field("method", l.Method)
		x.field("marker", l.Marker)
		if l.WithPasswords {
			x.field("with-passwords", "yes")
		}
	} else if in.FromSQL != "" {
		if err := x.path(in.FromSQL); err != nil {
			return "", err
		}
	}
	for _, w := range in.Watch {
		x.field("watch", w)
		if err := x.path(w); err != nil && in.Live == nil {
			return "", err
		}
	}
	return x.sum(), nil
}

// ImportKey is the key an imported template is filed under when nobody
// vouches for the content key its meta.json claims (template import,
// template pull): 64 hex digits of a SHA-256 over source, a digest of the
// archive ("sha256:<hex>" of its bytes, or "oci:<manifest digest>"). The
// same archive always gets the same key, and no build computes it, so an
// import never answers a build. key_test.go pins it.
func ImportKey(source string) string {
	x := newHasher()
	x.field("import", source)
	return x.sum()
}

// GroupKey is the client key a runner group's build through the daemon
// is filed under (docs/security.md, "Runner groups on a shared node"):
// 64 hex digits of a SHA-256 over the group and the key it named. Two
// groups naming the same key build two templates, and no client key
// names another group's. key_test.go pins it.
func GroupKey(group, key string) string {
	x := newHasher()
	x.field("group", group)
	x.field("key", key)
	return x.sum()
}

// ForkKey is the key a fork made with a caller's key is filed under
// (`lease fork --key`): 64 hex digits of a SHA-256 over the parent
// template's hash and the caller's key, so the same key forked from the
// same template finds the fork made before, and from another template
// (another parent, or the parent rebuilt) makes a new one. No build
// computes it. key_test.go pins it.
func ForkKey(parent, key string) string {
	x := newHasher()
	x.field("fork-of", parent)
	x.field("key", key)
	return x.sum()
}

// BaseKey names the base data directory (BaseDir) of a server version and
// build profile key: 16 hex digits.
func BaseKey(server, profile string) string {
	x := newHasher()
	x.field("server", server)
	x.field("profile", profile)
	x.field("accounts", baseAccountsVersion)
	return x.sum()[:16]
}

// hasher accumulates a content key.
type hasher struct{ h hash.Hash }

// newHasher starts a key with pristine's format version.
func newHasher() *hasher {
	x := &hasher{h: sha256.New()}
	x.field("format", keyVersion)
	return x
}

// field adds a named value, length-prefixed so fields never run together.
func (x *hasher) field(name, value string) {
	fmt.Fprintf(x.h, "%d:%s=%d:%s\n", len(name), name, len(value), value)
}

// path adds a file, or every regular file below a directory in lexical
// order, by relative name and content.
func (x *hasher) path(path string) error {
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

func (x *hasher) file(name, path string) error {
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

// sum returns the key as 64 hex digits.
func (x *hasher) sum() string { return hex.EncodeToString(x.h.Sum(nil)) }
