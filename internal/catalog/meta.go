package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Meta describes a built template. It is stored as meta.json beside the
// template's data directory, readable by its owner only (it holds the
// template account's password).
type Meta struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
	Key  string `json:"key,omitempty"` // the client's content key, if a client built it
	// Imported is the archive digest an untrusted import filed the template
	// under (Hash is ImportKey(Imported)); empty for a template built here
	// or pulled from a fleet cache that vouches for its key.
	Imported string    `json:"imported,omitempty"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// Server is the version of the server that built it; a slot must run the same.
	Server  string `json:"server"`
	Flavor  string `json:"flavor"`
	Backend string `json:"backend"`
	// LogFileSize is innodb_log_file_size of the data directory.
	LogFileSize int64 `json:"log_file_size"`
	// ServerOptions are the options (KEY=VALUE) the template was built with
	// and its slots start with: utf8mb4 by default, and --server-option.
	ServerOptions []string `json:"server_options,omitempty"`
	// Databases are the schemas a lease hands out: one, or K with --dbs-per-slot.
	Databases []string `json:"databases"`
	// User and Password name the account the build ran migrations and the
	// init command as (never logged). The build locks it with a new random
	// password before it stops, so the password opens no clone. An export
	// leaves the password out (Exported), and an import drops any an
	// archive carries.
	User     string `json:"user"`
	Password string `json:"password,omitempty"`
	// Accounts is AccountsVersion when the data directory's accounts were
	// secured (mariadb.SecureAccounts; see CheckSecured); empty for a template of an older
	// pristine, which must be rebuilt.
	Accounts string `json:"accounts,omitempty"`
	// Definers says which objects the build re-owned and which DEFINERs it
	// reduced (see Definers).
	Definers *Definers `json:"definers,omitempty"`
	// Bytes is the space the data directory takes on disk.
	Bytes        int64    `json:"bytes"`
	BuildSeconds float64  `json:"build_seconds"`
	Inputs       []string `json:"inputs,omitempty"`
	// Warnings are what the build found that clones will not carry.
	Warnings []string `json:"warnings,omitempty"`
	InitCmd  string   `json:"init_cmd,omitempty"`
	// Group is the runner group (serve --group-tokens) whose token built
	// it through the daemon, under GroupKey; empty for the operator's.
	Group string `json:"group,omitempty"`
	// Parent is the hash of the template a fork was made from (a lease of
	// it: lineage.go), ParentName its name then; empty for every other
	// template. The fork's data does not depend on its parent's: the
	// lineage is what `template ls` shows and `template rm` protects.
	Parent     string `json:"parent,omitempty"`
	ParentName string `json:"parent_name,omitempty"`
}

// Database is the first (or only) database of the template.
func (m *Meta) Database() string {
	if len(m.Databases) == 0 {
		return ""
	}
	return m.Databases[0]
}

const metaFile = "meta.json"

// ReadMeta reads the meta.json in dir as it is, unchecked (see Validate):
// an archive's, before it is imported.
func ReadMeta(dir string) (*Meta, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, metaFile), err)
	}
	return &m, nil
}

// MetaFile is the name of a template's meta.json, in its directory and in
// its archive.
const MetaFile = metaFile

// Exported is the meta.json that goes into an archive of the template
// (template export, push, a fleet cache): m without its build account's
// password. The password opens nothing once the build stopped (the build
// locks the account with another), and an importer ignores any password
// an archive carries; but whoever reads an archive or a registry learns
// no secret from it.
func (m *Meta) Exported() ([]byte, error) {
	c := *m
	c.Password = ""
	return json.MarshalIndent(&c, "", "  ")
}

// writeMeta writes meta.json through a temporary file and a rename, so a
// reader never sees it half-written.
func writeMeta(dir string, m *Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, metaFile), b, 0o600)
}

func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
