package pool

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A lease's option file lets MariaDB's own clients (mariadb, mariadb-dump,
// mariadb-admin) connect to its database with no flags: the lease's
// environment sets MYSQL_HOME to the file's directory, and the clients read
// $MYSQL_HOME/my.cnf after /etc/my.cnf and /etc/mysql/my.cnf (and before
// ~/.my.cnf). The file is 0600; when the lease ends it is emptied and its
// path is gone (optionDirs).

// optionDir is the directory of a lease's option file; the spare ones
// are under optionSpares.
func (p *Pool) optionDir(id string) string {
	return filepath.Join(p.run, "leases", id)
}

// optionSpares is the directory of the spare option directories. Its
// name starts with a dot, which no lease id does.
func optionSpares(run string) string {
	return filepath.Join(run, "leases", ".spare")
}

// optionFileText is a lease's my.cnf: the connection in [client], which
// every client reads, and the database in [mysql] and [mariadb-client], the
// groups of the mariadb client only (mariadb-dump would read a database
// option as its --databases flag).
func optionFileText(l *Lease) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# pristine lease %s (template %s, slot %d): removed when the lease ends\n", l.ID, l.Template, l.Slot)
	if l.CA == "" {
		fmt.Fprintf(&b, "[client]\nuser=%s\npassword=%s\nsocket=%s\nport=%s\n", optionValue(l.User), optionValue(l.Password), optionValue(l.Socket), strconv.Itoa(l.Port))
	} else {
		// A slot reachable over the network: TCP with TLS, the server's
		// certificate verified against the lease's CA (ca.pem beside
		// this file). MariaDB's clients also check its name
		// (ssl-verify-server-cert, in the group only they read); MySQL's
		// verify the CA (ssl-ca without ssl-mode means VERIFY_CA).
		fmt.Fprintf(&b, "[client]\nuser=%s\npassword=%s\nhost=%s\nport=%s\nprotocol=TCP\nssl-ca=%s\n[client-mariadb]\nssl-verify-server-cert\n",
			optionValue(l.User), optionValue(l.Password), optionValue(l.Host), strconv.Itoa(l.Port), optionValue(filepath.Join(filepath.Dir(l.OptionFile), "ca.pem")))
	}
	for _, group := range []string{"mysql", "mariadb-client"} {
		fmt.Fprintf(&b, "[%s]\ndatabase=%s\n", group, optionValue(l.Database))
	}
	return b.String()
}

// optionValue quotes a value for an option file.
func optionValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// writeOptionFile writes a lease's option file. No client can know its
// path before the lease is handed out, so it is written in place: in a
// directory an ended lease left (renamed to the lease's id) when there is
// one, else in a new one.
func (p *Pool) writeOptionFile(l *Lease) error {
	dir := p.optionDir(l.ID)
	if err := p.options.take(dir); err != nil {
		return fmt.Errorf("lease %s: option file: %w", l.ID, err)
	}
	if l.CA != "" {
		if err := rewrite(filepath.Join(dir, "ca.pem"), []byte(l.CA)); err != nil {
			return fmt.Errorf("lease %s: option file: %w", l.ID, err)
		}
	}
	if err := rewrite(filepath.Join(dir, "my.cnf"), []byte(optionFileText(l))); err != nil {
		return fmt.Errorf("lease %s: option file: %w", l.ID, err)
	}
	return nil
}

// removeOptionFile takes a lease's option file away when the lease ends:
// the file is emptied and its directory renamed to a spare name for a
// later lease (removed when that fails).
func (p *Pool) removeOptionFile(id string) {
	if id != "" {
		p.options.put(p.optionDir(id))
	}
}

// optionDirs keeps the directories of ended leases' option files for the
// next leases. Each lease's directory is named after its id, so what a
// holder's MYSQL_HOME names is gone when its lease ends; but a directory
// and a file made and removed for every lease cost an inode each, which
// on ext4 costs more the more inodes were freed in the last seconds (the
// allocator steps over each recently deleted one): at a few hundred
// leases a second, over a millisecond of the daemon's CPU per lease. A
// rename and a rewrite in place allocate none.
type optionDirs struct {
	mu     sync.Mutex
	spares string   // the directory of the spare ones
	free   []string // spare directories, by path; guarded by mu
	made   int      // spare names handed out; guarded by mu
}

// clear removes the spare directories a previous daemon left: their
// list was in its memory.
func (o *optionDirs) clear() {
	_ = os.RemoveAll(o.spares)
}

// take makes dir a lease's option directory: a spare one renamed, or a
// new one (with its parents, for the pool's first lease).
func (o *optionDirs) take(dir string) error {
	o.mu.Lock()
	var spare string
	if n := len(o.free); n > 0 {
		spare, o.free = o.free[n-1], o.free[:n-1]
	}
	o.mu.Unlock()
	if spare != "" {
		if err := os.Rename(spare, dir); err == nil {
			return nil
		}
		_ = os.RemoveAll(spare)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if !os.IsNotExist(err) {
			return err
		}
		return os.MkdirAll(dir, 0o700)
	}
	return nil
}

// put empties an ended lease's option file (its password is no longer
// valid, but no file keeps it) and keeps its directory as a spare; a
// directory that holds more than pristine wrote there is removed, so
// nothing left in it reaches the next holder.
func (o *optionDirs) put(dir string) {
	if !onlyOptionFiles(dir) || rewrite(filepath.Join(dir, "my.cnf"), nil) != nil {
		_ = os.RemoveAll(dir)
		return
	}
	o.mu.Lock()
	o.made++
	spare := filepath.Join(o.spares, strconv.Itoa(o.made))
	o.mu.Unlock()
	err := os.Rename(dir, spare)
	if err != nil && os.IsNotExist(err) {
		if err = os.MkdirAll(o.spares, 0o700); err == nil {
			err = os.Rename(dir, spare)
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return
	}
	o.mu.Lock()
	o.free = append(o.free, spare)
	o.mu.Unlock()
}

// onlyOptionFiles reports whether dir holds nothing but the regular
// files writeOptionFile writes.
func onlyOptionFiles(dir string) bool {
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if (e.Name() != "my.cnf" && e.Name() != "ca.pem") || !e.Type().IsRegular() {
			return false
		}
	}
	return true
}

// rewrite writes data to the file at path, 0600, in place when it exists
// (no new inode), cut to data's length; a symlink there is an error, not
// followed.
func rewrite(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
