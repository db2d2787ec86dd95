package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// TestConnectByHand: after `eval "$(pristine lease)"`, the server's own
// clients (MariaDB's, or MySQL's mysql, mysqldump and mysqladmin in the
// MySQL root of scripts/servers.sh) connect to the leased database with no
// flags, and `pristine sql` runs the client on a lease or on a fresh one it
// releases.
func TestConnectByHand(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	e.must("pool", "up", "--template", "app", "--size", "2")

	home := t.TempDir() // no ~/.my.cnf
	script := `set -e
eval "$(pristine lease)"
"$1" -N -e 'SELECT CONCAT(DATABASE(), ":", v) FROM canary'
"$2" "$MYSQL_DATABASE" canary | grep -c "INSERT INTO .canary."
"$3" ping
pristine sql -- -N -e "SELECT CONCAT('sql:', DATABASE())"
pristine release "$PRISTINE_LEASE"
test ! -e "$MYSQL_HOME/my.cnf" && echo "option file removed"
pristine sql -- -N -e "SELECT CONCAT('after release:', DATABASE())"`
	cmd := exec.Command("bash", "-c", script, "bash", mariadbtest.Client("mariadb"), mariadbtest.Client("mariadb-dump"), mariadbtest.Client("mariadb-admin"))
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "PRISTINE_ROOT="+e.root, "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("connecting by hand: %v\n%s", err, out)
	}
	for _, want := range []string{"app:pristine\n", "\n1\n", "mysqld is alive", "sql:app\n", "option file removed", "after release:app\n", "is not held any more"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A fresh lease for the client's lifetime, released when it exits, and
	// the client's exit status passed on.
	cmd = exec.Command(bin, "--root", e.root, "sql", "--", "-N", "-e", "SELECT v FROM canary")
	cmd.Env = append(os.Environ(), "HOME="+home, "PRISTINE_LEASE=")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "pristine") {
		t.Fatalf("pristine sql on a fresh lease: %v\n%s", err, out)
	}
	cmd = exec.Command(bin, "--root", e.root, "sql", "--", "-e", "SELECT * FROM nosuch")
	cmd.Env = append(os.Environ(), "HOME="+home, "PRISTINE_LEASE=")
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "nosuch") {
		t.Fatalf("pristine sql with a failing statement: %v\n%s; want mariadb's error and exit status 1", err, out)
	}
	var ls []lease
	if err := json.Unmarshal([]byte(e.must("lease", "ls", "--json")), &ls); err != nil || len(ls) != 0 {
		t.Fatalf("leases left after pristine sql: %+v (%v)", ls, err)
	}
}
