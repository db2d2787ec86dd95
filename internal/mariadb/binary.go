// Package mariadb drives the database server process: it finds the installed
// server binary and its version, creates empty data directories, and starts,
// probes and stops throwaway server instances with a durability-off profile.
// MySQL's mysqld (8.0.30 and later) goes through the same code; what differs
// between the two flavours lives in flavor.go. scripts/servers.sh runs the
// tests against MariaDB 11.8 and MySQL 9.7 (docs/servers.md).
package mariadb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/internal/svcuser"
)

// Flavor tells MariaDB from MySQL.
type Flavor string

// The server flavors pristine knows.
const (
	MariaDB Flavor = "mariadb"
	MySQL   Flavor = "mysql"
)

// Binary is an installed server binary and what it says of itself.
type Binary struct {
	Path    string // absolute path of mariadbd or mysqld
	Flavor  Flavor
	Version string // e.g. "10.11.19-MariaDB-0+deb12u1"
	Major   int    // e.g. 10
	Minor   int    // e.g. 11
}

// ErrNoServer is returned when no server binary can be found.
var ErrNoServer = errors.New("no mariadbd or mysqld found: install MariaDB (apt-get install mariadb-server) or MySQL, or set PRISTINE_MARIADBD=/path/to/mariadbd (or mysqld)")

var searchDirs = []string{"/usr/sbin", "/usr/libexec", "/usr/local/mysql/bin", "/usr/local/bin", "/usr/bin"}

// FindBinary locates the server: $PRISTINE_MARIADBD, then mariadbd and mysqld
// on PATH and in the usual system directories. It runs `--version` once.
func FindBinary(ctx context.Context) (*Binary, error) {
	if p := os.Getenv("PRISTINE_MARIADBD"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("PRISTINE_MARIADBD=%s: %w: point it at an installed mariadbd (e.g. /usr/sbin/mariadbd) or unset it", p, err)
		}
		return probeBinary(ctx, p)
	}
	for _, name := range []string{"mariadbd", "mysqld"} {
		if p, err := exec.LookPath(name); err == nil {
			return probeBinary(ctx, p)
		}
		for _, d := range searchDirs {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return probeBinary(ctx, p)
			}
		}
	}
	return nil, ErrNoServer
}

var versionRe = regexp.MustCompile(`Ver\s+(\d+)\.(\d+)\.(\S+)`)

func probeBinary(ctx context.Context, path string) (*Binary, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("server binary %s: %w", path, err)
	}
	out, err := exec.CommandContext(ctx, abs, "--no-defaults", "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("run %s --version: %w: %s", abs, err, bytes.TrimSpace(out))
	}
	return ParseVersion(abs, string(out))
}

// ParseVersion reads the output of `mariadbd --version`, for example
// "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64".
func ParseVersion(path, out string) (*Binary, error) {
	m := versionRe.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("server binary %s: cannot read a version from %q", path, strings.TrimSpace(out))
	}
	b := &Binary{Path: path, Flavor: MySQL}
	b.Major, _ = strconv.Atoi(m[1])
	b.Minor, _ = strconv.Atoi(m[2])
	b.Version = m[1] + "." + m[2] + "." + m[3]
	if strings.Contains(strings.ToLower(out), "mariadb") {
		b.Flavor = MariaDB
	}
	if b.Flavor == MariaDB && (b.Major < 10 || b.Major == 10 && b.Minor < 6) {
		return nil, fmt.Errorf("server binary %s is MariaDB %s; pristine needs 10.6 or later: upgrade the mariadb-server package", path, b.Version)
	}
	if b.Flavor == MySQL && (b.Major < 8 || b.Major == 8 && b.Minor == 0 && patchLevel(m[3]) < 30) {
		return nil, fmt.Errorf("server binary %s is MySQL %s; pristine needs MySQL 8.0.30 or later (8.4 LTS, 9.x): upgrade the server", path, b.Version)
	}
	return b, nil
}

// patchLevel reads the number that starts s ("30-log" gives 30).
func patchLevel(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(s[:i])
	return n
}

// InitDatadir creates an empty, initialised data directory at dir (which must
// not exist or be empty): mariadb-install-db for MariaDB, mysqld
// --initialize-insecure for MySQL, run as the servers' account (see
// internal/svcuser), which then owns dir (mode 0700). The root accounts
// have no password: before the directory is served on TCP, secure it with
// SecureAccounts on a server started with --skip-networking.
func (b *Binary) InitDatadir(ctx context.Context, dir string) error {
	acct, err := svcuser.Get()
	if err != nil {
		return err
	}
	return b.InitDatadirAs(ctx, dir, acct)
}

// InitDatadirAs is InitDatadir with the bootstrap run as acct (a server id
// claimed for dir), which then owns dir.
func (b *Binary) InitDatadirAs(ctx context.Context, dir string, acct svcuser.Account) error {
	// A private temporary directory: a server starting up removes every
	// #sql file in its tmpdir, so in a shared /tmp any other server that
	// starts meanwhile would delete the bootstrap's temporary tables (it
	// then fails with "Unknown table 'mysql.tmp_proxies_priv'").
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("initialise data directory %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	// The bootstrap runs as the servers' account (never root), on
	// directories that account owns.
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("initialise data directory %s: %w", dir, err)
	}
	for _, d := range []string{tmp, dir} {
		if err := acct.Own(d, 0o700); err != nil {
			return fmt.Errorf("initialise data directory %s: %w", dir, err)
		}
	}
	if err := acct.CheckReachable(dir); err != nil {
		return fmt.Errorf("initialise data directory %s: %w", dir, err)
	}
	// The same AIO setting as the slots, so that a machine whose AIO or
	// io_uring limits are taken by other servers can still initialise.
	common := []string{"--no-defaults", "--datadir=" + dir, "--tmpdir=" + tmp, "--innodb-use-native-aio=0"}
	var cmd *exec.Cmd
	if b.Flavor == MariaDB {
		installDB, err := b.sibling("mariadb-install-db", "mysql_install_db")
		if err != nil {
			return err
		}
		// mariadb-install-db passes the options it does not know on to the
		// bootstrap server.
		cmd = exec.CommandContext(ctx, installDB, append(common, "--auth-root-authentication-method=normal",
			"--skip-test-db", "--skip-name-resolve", "--force")...)
	} else {
		cmd = exec.CommandContext(ctx, b.Path, append(common, "--initialize-insecure")...)
	}
	cmd.Env = serverEnv(nil)
	cmd.SysProcAttr = childAttr()
	cmd.SysProcAttr.Credential = acct.Credential()
	// The installer changes into its own directory; the account may not be
	// able to read the caller's.
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initialise data directory %s: %w: %s", dir, err, errorLines(out, 5))
	}
	return nil
}

// sibling finds a companion program next to the server binary, in its
// ../bin, or on PATH.
func (b *Binary) sibling(names ...string) (string, error) {
	dir := filepath.Dir(b.Path)
	for _, n := range names {
		for _, d := range []string{dir, filepath.Join(dir, "..", "bin"), "/usr/bin"} {
			p := filepath.Join(d, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found next to %s: install the package that ships it (Debian: mariadb-server)", names[0], b.Path)
}

// errorLines returns up to n lines of out that the server marked as errors,
// joined by " | ", or its last n lines when none is marked: the
// installer's closing boilerplate hides the cause otherwise.
func errorLines(out []byte, n int) string {
	var errs []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "[ERROR]") || strings.Contains(l, "ERROR:") {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) == 0 {
		return lastLines(out, n)
	}
	if len(errs) > n {
		errs = errs[:n]
	}
	return strings.Join(errs, " | ")
}

// lastLines returns the last n non-empty lines of out, joined by " | ".
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
