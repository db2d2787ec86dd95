package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// A template's hash is a SHA-256 in lowercase hex; it names the template's
// directory, its lock file and its pool's directories, so nothing else is
// ever accepted (no "x", "../", ".import-zzz").
var hashRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidName checks a template name.
func ValidName(name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("template name %q: use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit", name)
	}
	return nil
}

// accountRe is the template account's user name (pristine makes "pristine").
var accountRe = regexp.MustCompile(`^[A-Za-z0-9_]{1,80}$`)

// ValidHash checks that h is a template hash: 64 lowercase hex digits.
func ValidHash(h string) error {
	if !hashRe.MatchString(h) {
		return fmt.Errorf("hash %q is not a template hash (64 lowercase hex digits)", clip(h))
	}
	return nil
}

// ErrBadMeta is wrapped by errors about a meta.json that cannot describe a
// template pristine made.
var ErrBadMeta = errors.New("invalid template meta.json")

// Validate verifies the fields of a meta.json that name things on disk or in
// SQL: the name, the hash, the databases, the account and the key.
func (m *Meta) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadMeta, fmt.Sprintf(format, args...))
	}
	if err := ValidHash(m.Hash); err != nil {
		return bad("%v", err)
	}
	if err := ValidName(m.Name); err != nil {
		return bad("%v", err)
	}
	if len(m.Databases) == 0 {
		return bad("no databases")
	}
	seen := map[string]bool{}
	for _, db := range m.Databases {
		if err := validDatabase(db); err != nil {
			return bad("%v", err)
		}
		if seen[db] {
			return bad("database %q listed twice", db)
		}
		seen[db] = true
	}
	if !accountRe.MatchString(m.User) {
		return bad("account %q: use 1-80 letters, digits or '_'", clip(m.User))
	}
	if len(m.Password) > 128 || strings.ContainsAny(m.Password, "'\"\\`") || !printable(m.Password) {
		return bad("the account's password is not one pristine makes (at most 128 printable characters, no quotes or backslashes)")
	}
	if len(m.Key) > 256 || !printable(m.Key) {
		return bad("key %q: at most 256 printable characters", clip(m.Key))
	}
	if m.Parent != "" && ValidHash(m.Parent) != nil {
		return bad("parent %q is not a template hash", clip(m.Parent))
	}
	if len(m.ParentName) > 256 || !printable(m.ParentName) {
		return bad("parent name %q: at most 256 printable characters", clip(m.ParentName))
	}
	if m.LogFileSize < 0 || m.Bytes < 0 {
		return bad("negative sizes (log_file_size %d, bytes %d)", m.LogFileSize, m.Bytes)
	}
	return nil
}

// systemSchemas are the server's own schemas. A template's database is
// never one of them: leases get every privilege on the template's
// databases, so a template database named mysql would give a lease the
// grant tables.
var systemSchemas = []string{"mysql", "information_schema", "performance_schema", "sys"}

// ValidDatabase checks the name of a database a template loads into and
// hands out: 1-64 characters, no '/', '\\', '.', backtick, control
// characters or trailing space (a name is a directory of the data
// directory and is quoted in SQL), and not a system schema (mysql,
// information_schema, performance_schema, sys, in any case).
func ValidDatabase(db string) error { return validDatabase(db) }

// validDatabase refuses database names MariaDB would refuse, that could
// reach outside the data directory (a name is a directory there), or that
// name a system schema.
func validDatabase(db string) error {
	switch {
	case db == "" || len(db) > 64:
		return fmt.Errorf("database %q: 1-64 characters", clip(db))
	case strings.ContainsAny(db, "/\\.`") || !printable(db) || strings.HasSuffix(db, " "):
		return fmt.Errorf("database %q: no '/', '\\', '.', '`', control characters or trailing space", clip(db))
	}
	for _, sys := range systemSchemas {
		if strings.EqualFold(db, sys) {
			return fmt.Errorf("database %q: a system schema (%s) is never a template's database: name another", db, strings.Join(systemSchemas, ", "))
		}
	}
	return nil
}

// dbDir is the directory MariaDB keeps database db in: its name in the
// filename character set (letters, digits and '_' as they are; other ASCII
// as @ and four hex digits). ok is false for names with other characters,
// whose encoding is not computed here.
func dbDir(db string) (dir string, ok bool) {
	var b strings.Builder
	for _, c := range db {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			b.WriteRune(c)
		case c < 0x80:
			fmt.Fprintf(&b, "@%04x", c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func printable(s string) bool {
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// clip shortens a value for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Load reads the meta.json of the template directory named hash and
// checks that it describes that template.
func (c *Catalog) Load(hash string) (*Meta, error) {
	dir := c.Dir(hash)
	m, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, metaFile), err)
	}
	if m.Hash != hash {
		return nil, fmt.Errorf("%s: %w: it names hash %s but lies in directory %s", filepath.Join(dir, metaFile), ErrBadMeta, m.Hash[:12], clip(hash))
	}
	return m, nil
}

// ErrIncompatible is returned (wrapped) when an imported template was built
// by another server than the one installed here.
var ErrIncompatible = errors.New("template built by another server version")

// CheckServer refuses a template (an archive's, before import) built by
// another server version than version, the one installed here.
func (m *Meta) CheckServer(version string) error {
	if m.Server != version {
		return fmt.Errorf("%w: %s was built by %s but %s is installed here: build it on this runner, or install the same server version", ErrIncompatible, clip(m.Name), clip(m.Server), version)
	}
	return nil
}

// CheckImport checks an archive's meta.json (Validate, and its server
// options against the allow-list, mariadb.CheckTemplateOptions), the server flavor
// that built it against flavor, the one installed here, and what it says
// against the data directory staged beside it (staged/data); it
// recomputes what the data shows: the redo log size. The content key
// cannot be recomputed, as it covers inputs (the SQL, the init command's
// files) an archive does not carry: an imported template is trusted to be
// what its exporter built (docs/security.md).
func (m *Meta) CheckImport(flavor, staged string) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if err := mariadb.CheckTemplateOptions(m.ServerOptions); err != nil {
		return fmt.Errorf("%w: %w: no template with it is imported; build it without that option where it was exported", ErrBadMeta, err)
	}
	if m.Flavor != "" && m.Flavor != flavor {
		return fmt.Errorf("%w: %s was built by a %s server but %s is installed here", ErrIncompatible, m.Name, m.Flavor, flavor)
	}
	data := filepath.Join(staged, "data")
	if st, err := os.Lstat(data); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: the archive has no data directory", ErrBadMeta)
	}
	for _, db := range m.Databases {
		d, ok := dbDir(db)
		if !ok {
			continue
		}
		if st, err := os.Lstat(filepath.Join(data, d)); err != nil || !st.IsDir() {
			return fmt.Errorf("%w: database %s is listed but the data directory has no %s/", ErrBadMeta, db, d)
		}
	}
	return m.TakeLogSize(data)
}

// TakeLogSize sets m.LogFileSize from the redo log of data directory
// data, what a server started on it finds: MariaDB's ib_logfile0, or
// MySQL's #innodb_redo (mysqlRedoSize); unchanged when data has neither.
// An import calls it again once a server ran on the data, since MySQL
// makes and drops redo files as it runs.
func (m *Meta) TakeLogSize(data string) error {
	if st, err := os.Lstat(filepath.Join(data, "ib_logfile0")); err == nil && st.Mode().IsRegular() {
		m.LogFileSize = st.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: data/ib_logfile0 is not a regular file", ErrBadMeta)
	} else if n, err := mysqlRedoSize(data); err != nil {
		return err
	} else if n > 0 {
		m.LogFileSize = n
	}
	return nil
}

// mysqlRedoSize is the size of MySQL's redo log (8.0.30 and later): the
// files of data/#innodb_redo, which add up to innodb_redo_log_capacity
// (the profile's log size, see mariadb's flavor.go); 0 when there is none.
func mysqlRedoSize(data string) (int64, error) {
	dir := filepath.Join(data, "#innodb_redo")
	if st, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil || !st.IsDir() {
		return 0, fmt.Errorf("%w: data/#innodb_redo is not a directory", ErrBadMeta)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("%w: data/#innodb_redo: %v", ErrBadMeta, err)
	}
	var n int64
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return 0, fmt.Errorf("%w: data/#innodb_redo/%s is not a regular file", ErrBadMeta, e.Name())
		}
		fi, err := e.Info()
		if err != nil {
			return 0, fmt.Errorf("%w: data/#innodb_redo/%s: %v", ErrBadMeta, e.Name(), err)
		}
		n += fi.Size()
	}
	return n, nil
}

// warnedDirs are the template directories already warned about, process
// wide (a Catalog may be opened more than once).
var warnedDirs sync.Map

// warnBad reports a template directory whose meta.json is not valid, once
// per directory: it is skipped, never used.
func (c *Catalog) warnBad(dir string, err error) {
	if _, done := warnedDirs.LoadOrStore(dir, true); done {
		return
	}
	c.logger().Warn("skipping a template directory whose meta.json is not valid: move it out of the store or remove it",
		"dir", dir, "err", err)
}

// CheckServerOptions refuses a template whose server options are not all
// ones a template may carry (mariadb.TemplateOptions): a meta.json
// written by an older pristine, or edited on disk. Nothing starts a
// server with them; the error names the option and the fix.
func CheckServerOptions(m *Meta) error {
	if err := mariadb.CheckTemplateOptions(m.ServerOptions); err != nil {
		return fmt.Errorf("template %s (%s): %w; remove it (pristine template rm %s) or build it again without that option", m.Name, shortHash(m.Hash), err, m.Hash)
	}
	return nil
}
