package pool_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/pool"
)

// clientEnv is the environment of a shell after `eval "$(pristine lease)"`:
// the lease's variables, and a HOME without a .my.cnf.
func clientEnv(t *testing.T, l *pool.Lease) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	return append(env, l.Env...)
}

// TestLeaseOptionFile: with a lease's environment, MariaDB's own clients
// connect to the leased database with no flags; the file is 0600 and gone
// once the lease ends.
func TestLeaseOptionFile(t *testing.T) {
	for _, c := range []string{"mariadb", "mariadb-dump", "mariadb-admin"} {
		if _, err := exec.LookPath(mariadbtest.Client(c)); err != nil {
			t.Skipf("%s not installed (apt-get install mariadb-client)", c)
		}
	}
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	l := lease(t, p)
	fi, err := os.Stat(l.OptionFile)
	if err != nil {
		t.Fatalf("the lease's option file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("option file mode %v, want 0600 (it holds the password)", fi.Mode().Perm())
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"mariadb", []string{"mariadb", "-N", "-e", "SELECT CONCAT(CURRENT_USER(), ' ', DATABASE(), ' ', COUNT(*)) FROM canary"}, l.User + "@% " + l.Database + " 2"},
		{"mariadb-dump", []string{"mariadb-dump", l.Database, "canary"}, "(2,'pristine');"},
		{"mariadb-admin", []string{"mariadb-admin", "ping"}, "mysqld is alive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := mariadbtest.Client(tc.args[0])
			cmd := exec.Command(client, tc.args[1:]...)
			// Only MYSQL_HOME: the option file alone must be enough.
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "MYSQL_HOME=" + filepath.Dir(l.OptionFile)}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("%s with MYSQL_HOME only: %v\n%s\nwant %q", strings.Join(tc.args, " "), err, out, tc.want)
			}
			// And the whole environment a shell gets from `pristine lease`.
			cmd = exec.Command(client, tc.args[1:]...)
			cmd.Env = clientEnv(t, l)
			out, err = cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("%s with the lease's environment: %v\n%s\nwant %q", strings.Join(tc.args, " "), err, out, tc.want)
			}
		})
	}
	var was syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(l.OptionFile), &was); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Release(context.Background(), l.ID, pool.Dirty); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(l.OptionFile)); !os.IsNotExist(err) {
		t.Errorf("option file directory after release: %v, want it removed", err)
	}
	leases := filepath.Dir(filepath.Dir(l.OptionFile))
	noPassword(t, leases, l.Password)

	// The next lease gets the ended lease's directory, renamed, with its
	// file rewritten: it names the new lease alone.
	l2 := lease(t, p)
	var now syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(l2.OptionFile), &now); err != nil {
		t.Fatal(err)
	}
	if now.Ino != was.Ino {
		t.Errorf("the second lease's option directory is inode %d, want the first's (%d) renamed", now.Ino, was.Ino)
	}
	cmd := exec.Command(mariadbtest.Client("mariadb"), "-N", "-e", "SELECT CURRENT_USER()")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "MYSQL_HOME=" + filepath.Dir(l2.OptionFile)}
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != l2.User+"@%" {
		t.Fatalf("the second lease's option file: %v\n%s\nwant %s@%%", err, out, l2.User)
	}
	noPassword(t, leases, l.Password)
	// A file the holder left beside its option file goes with the
	// directory: the next lease gets a new one.
	if err := os.WriteFile(filepath.Join(filepath.Dir(l2.OptionFile), "left.cnf"), []byte("[client]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Release(context.Background(), l2.ID, pool.Dirty); err != nil {
		t.Fatal(err)
	}
	noPassword(t, leases, l2.Password)
	l3 := lease(t, p)
	if _, err := os.Stat(filepath.Join(filepath.Dir(l3.OptionFile), "left.cnf")); !os.IsNotExist(err) {
		t.Errorf("a file left in an ended lease's option directory reached the next lease: %v", err)
	}
	// An option file replaced by a symlink: its release empties nothing
	// outside, and the next lease's file is a file of its own.
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(l3.OptionFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, l3.OptionFile); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Release(context.Background(), l3.ID, pool.Dirty); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("the file an ended lease's option file linked to: %q, %v; want it untouched", b, err)
	}
	l4 := lease(t, p)
	if fi, err := os.Lstat(l4.OptionFile); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the next lease's option file: %v, %v; want a regular file", fi, err)
	}
}

// noPassword fails when a file under dir holds password.
func noPassword(t *testing.T, dir, password string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), password) {
			t.Errorf("%s holds the password of an ended lease", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
