package pool_test

// The attacker's tests of docs/security.md: another local user, a lease
// holder and the build account each try to become root of a slot or of
// the host. Every probe must fail.

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
)

// securityPool is a one-slot pool of the test schema and its one lease.
func securityPool(t *testing.T) (*template.Builder, *catalog.Meta, *pool.Pool, *pool.Lease) {
	t.Helper()
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	return st, m, p, lease(t, p)
}

// serverPID reads the slot server's pid file.
func serverPID(t *testing.T, l *pool.Lease) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(l.Socket), "mysqld.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestSecurityServerNotRoot: the slot's mariadbd does not run as uid 0
// (real, effective, saved or filesystem), so SQL that writes a file or
// loads a plugin never acts as the host's root.
func TestSecurityServerNotRoot(t *testing.T) {
	_, _, _, l := securityPool(t)
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", serverPID(t, l)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Uid:") && !strings.HasPrefix(line, "Gid:") {
			continue
		}
		seen = true
		for _, id := range strings.Fields(line)[1:] {
			if id == "0" && os.Geteuid() == 0 {
				t.Errorf("slot server runs with id 0: %q", line)
			}
		}
	}
	if !seen {
		t.Fatal("no Uid line in /proc/PID/status")
	}
	if os.Geteuid() == 0 {
		var fsp string
		db := open(t, l)
		if err := db.QueryRow("SELECT @@secure_file_priv").Scan(&fsp); err != nil {
			t.Fatal(err)
		}
		if fsp == "" {
			t.Error("secure_file_priv is empty: the server may read and write files anywhere its account can")
		}
	}
}

// asNobody runs a command as user nobody with no groups or capabilities,
// or skips the test when pristine does not run as root.
func asNobody(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: another local user is played by setpriv --reuid=65534")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux) to play another local user")
	}
	full := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"}, args...)
	cmd := exec.Command("setpriv", full...)
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/nonexistent"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSecurityOtherLocalUser: another local user reaches no slot as root,
// anonymously, or through the socket, and reads no data or run directory.
func TestSecurityOtherLocalUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: another local user is played by setpriv --reuid=65534")
	}
	st, m, _, l := securityPool(t)
	client := []string{mariadbtest.Client("mariadb"), "--no-defaults", "--connect-timeout=10", "-N", "-e", "SELECT CURRENT_USER()"}
	port := strconv.Itoa(l.Port)
	data := filepath.Join(pool.Dir(st.Catalog(), m), fmt.Sprintf("%03d", l.Slot), "data")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"tcp as root without password", append(client, "-h127.0.0.1", "-P"+port, "-uroot")},
		{"tcp as anonymous", append(client, "-h127.0.0.1", "-P"+port, "-unobody")},
		{"tcp as the build account", append(client, "-h127.0.0.1", "-P"+port, "-u"+m.User, "-p"+m.Password)},
		{"socket as root", append(client, "-S", l.Socket, "-uroot")},
		{"socket as anonymous", append(client, "-S", l.Socket, "-unobody")},
		{"list the data directory", []string{"ls", data}},
		{"read the grant table", []string{"cat", filepath.Join(data, "mysql", "global_priv.MAD")}},
		{"list the run directory", []string{"ls", filepath.Dir(l.Socket)}},
		{"read the error log", []string{"cat", filepath.Join(filepath.Dir(l.Socket), "error.log")}},
		{"read the admin secret", []string{"cat", filepath.Join(st.Catalog().Root().Path, "admin.secret")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := asNobody(t, c.args...)
			if err == nil {
				t.Fatalf("%v as nobody succeeded: %s", c.args, out)
			}
		})
	}
}

// TestSecurityAdminAccount: the slot's root accepts only the root's admin
// secret, only at localhost; no other root or anonymous account exists; the
// build account's password opens nothing; the secret file is 0600.
func TestSecurityAdminAccount(t *testing.T) {
	st, m, _, l := securityPool(t)
	noPass, err := sql.Open("mysql", dsn.Socket(l.Socket, "root", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer noPass.Close()
	if err := noPass.Ping(); err == nil {
		t.Error("root without password is accepted on the slot's socket")
	}
	build, err := sql.Open("mysql", dsn.TCP(l.Port, m.User, m.Password, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer build.Close()
	if err := build.Ping(); err == nil {
		t.Errorf("the build account %s opens a slot with the password in meta.json", m.User)
	}
	admin, err := sql.Open("mysql", dsn.Socket(l.Socket, "root", st.Catalog().Admin(), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var accounts string
	if err := admin.QueryRow(`SELECT COALESCE(GROUP_CONCAT(CONCAT(User, '@', Host) ORDER BY User, Host), '')
		FROM mysql.user WHERE User IN ('root', '') AND NOT (User = 'root' AND Host = 'localhost')`).Scan(&accounts); err != nil {
		t.Fatal(err)
	}
	if accounts != "" {
		t.Errorf("root or anonymous accounts besides root@localhost: %s", accounts)
	}
	fi, err := os.Stat(filepath.Join(st.Catalog().Root().Path, "admin.secret"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.secret has mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestSecurityLeaseAccount: a lease account reaches nothing outside its
// slot's user databases and cannot make itself root of the slot.
func TestSecurityLeaseAccount(t *testing.T) {
	st, _, _, l := securityPool(t)
	db := open(t, l)
	db.SetMaxOpenConns(1)
	admin, err := sql.Open("mysql", dsn.Socket(l.Socket, "root", st.Catalog().Admin(), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adminConn, err := admin.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer adminConn.Close()
	var adminID int64
	if err := adminConn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&adminID); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(os.TempDir(), fmt.Sprintf("pristine-probe-%d", time.Now().UnixNano()))
	t.Cleanup(func() { os.Remove(outside); os.Remove(outside + ".out") })
	if _, err := db.Exec("CREATE TABLE probe_lines (line TEXT)"); err != nil {
		t.Fatal(err)
	}
	// DATA DIRECTORY would put a table's file outside the data directory
	// (--skip-symbolic-links makes the server ignore it).
	ddir, err := os.MkdirTemp("", "pristine-probe-dd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(ddir)
	if err := os.Chmod(ddir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE dd (a INT) ENGINE=InnoDB DATA DIRECTORY='" + ddir + "'"); err != nil && !privilegeError(err) {
		t.Fatalf("CREATE TABLE ... DATA DIRECTORY: %v", err)
	}
	if ents, _ := os.ReadDir(ddir); len(ents) > 0 {
		t.Errorf("a lease put a table's file outside the data directory: %s/%s", ddir, ents[0].Name())
	}
	// Each probe would succeed with the privilege it lacks; it must fail
	// with a privilege error, not for another reason. The destructive ones
	// come last.
	probes := []struct{ name, q string }{
		{"dumpfile outside", "SELECT 'x' INTO DUMPFILE '" + outside + "'"},
		{"outfile outside", "SELECT * FROM canary INTO OUTFILE '" + outside + ".out'"},
		{"load data infile", "LOAD DATA INFILE '/etc/passwd' INTO TABLE probe_lines"},
		{"install soname", "INSTALL SONAME 'ha_blackhole'"},
		{"set password for root", "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('owned')"},
		{"create user", "CREATE USER 'evil'@'%' IDENTIFIED BY 'x'"},
		{"grant itself the grant tables", "GRANT SELECT ON mysql.global_priv TO CURRENT_USER"},
		{"definer root", "CREATE DEFINER='root'@'localhost' PROCEDURE evil() SQL SECURITY DEFINER SET GLOBAL read_only=1"},
		{"set global", "SET GLOBAL read_only=1"},
		{"write mysql.proc", "INSERT INTO mysql.proc (db, name, type, specific_name, language, sql_data_access, is_deterministic, security_type, param_list, returns, body, definer, comment) VALUES ('app', 'evil2', 'PROCEDURE', 'evil2', 'SQL', 'CONTAINS_SQL', 'NO', 'DEFINER', '', '', 'SET GLOBAL read_only=1', 'root@localhost', '')"},
		{"write mysql.global_priv", "UPDATE mysql.global_priv SET Priv = '{}' WHERE User = 'nobody'"},
		{"read mysql.global_priv", "SELECT COUNT(*) FROM mysql.global_priv"},
		{"create in mysql", "CREATE TABLE mysql.evil (a INT)"},
		{"flush privileges", "FLUSH PRIVILEGES"},
		// The in-place reset reads MySQL's performance schema counters
		// (mariadb.Changes): none of its setup may be the lease's.
		{"turn the table I/O counters off", "UPDATE performance_schema.setup_consumers SET ENABLED = 'NO'"},
		{"stop counting a table", "INSERT INTO performance_schema.setup_objects VALUES ('TABLE', 'app', 'canary', 'NO', 'NO')"},
		{"stop counting its own thread", "UPDATE performance_schema.threads SET INSTRUMENTED = 'NO'"},
		{"reset the table I/O counters", "TRUNCATE TABLE performance_schema.table_io_waits_summary_by_table"},
		{"kill the admin", fmt.Sprintf("KILL %d", adminID)},
		{"drop mysql", "DROP DATABASE mysql"},
		{"shutdown", "SHUTDOWN"},
	}
	if st.Binary().Flavor == mariadb.MySQL {
		// MySQL's spellings, and its dynamic privileges (none of which a
		// lease holds): each needs one a lease must not have.
		for i, c := range probes {
			switch c.name {
			case "install soname":
				probes[i].q = "INSTALL PLUGIN blackhole SONAME 'ha_blackhole.so'"
			case "set password for root":
				probes[i].q = "SET PASSWORD FOR 'root'@'localhost' = 'owned'"
			}
		}
		probes = append(probes[:len(probes)-3:len(probes)-3], append([]struct{ name, q string }{
			{"write mysql.user", "UPDATE mysql.user SET authentication_string = '' WHERE User = 'root'"},
			{"grant itself SYSTEM_USER", "GRANT SYSTEM_USER ON *.* TO CURRENT_USER()"},
			{"grant itself SET_ANY_DEFINER", "GRANT SET_ANY_DEFINER ON *.* TO CURRENT_USER()"},
			{"clone the data directory out", "CLONE LOCAL DATA DIRECTORY = '" + outside + ".clone'"},
			{"persist a global", "SET PERSIST read_only=1"},
		}, probes[len(probes)-3:]...)...)
	}
	for _, c := range probes {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.Exec(c.q)
			if err == nil {
				t.Fatalf("lease account ran %q", c.q)
			}
			if !privilegeError(err) {
				t.Fatalf("%q failed, but not for lack of a privilege, so the probe proves nothing: %v", c.q, err)
			}
		})
	}
	for _, f := range []string{outside, outside + ".out"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("a lease wrote %s", f)
		}
	}
	var f sql.NullString
	if err := db.QueryRow("SELECT LOAD_FILE('/etc/passwd')").Scan(&f); err != nil {
		t.Fatal(err)
	}
	if f.Valid {
		t.Error("LOAD_FILE('/etc/passwd') returned the file to a lease")
	}
	rows, err := db.Query("SELECT USER FROM information_schema.PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		if u != l.User {
			t.Errorf("a lease sees the connection of %s in the process list", u)
		}
	}
	if err := adminConn.PingContext(context.Background()); err != nil {
		t.Errorf("the admin connection died: %v", err)
	}
}

// privilegeError reports whether err is the server refusing for lack of a
// privilege (or of ownership of a thread).
func privilegeError(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1044, 1045, 1142, 1143, 1227, 1370, 1095, 1211, 1410:
		return true
	}
	return false
}

// TestSecurityLeaseKeepsWhatTestsNeed: what a test legitimately does still
// works with the restricted grant (docs/security.md lists it).
func TestSecurityLeaseKeepsWhatTestsNeed(t *testing.T) {
	_, _, _, l := securityPool(t)
	db := open(t, l)
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO t VALUES (1, 1)",
		"CREATE VIEW v AS SELECT * FROM t",
		"CREATE PROCEDURE p() SQL SECURITY DEFINER SELECT COUNT(*) FROM t",
		"CALL p()",
		"CREATE FUNCTION f() RETURNS INT DETERMINISTIC RETURN 1",
		"CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.v = 2",
		"CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO DELETE FROM t WHERE 0",
		"CREATE TEMPORARY TABLE tmp (a INT)",
		"LOCK TABLES t WRITE",
		"UNLOCK TABLES",
		"SHOW CREATE VIEW v",
		"ALTER TABLE t ADD COLUMN w INT",
		"TRUNCATE TABLE child",
		"CREATE DATABASE other",
		"CREATE TABLE other.t (a INT)",
		"INSERT INTO other.t VALUES (1)",
		"DROP DATABASE other",
		"SET SESSION sql_mode = ''",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Errorf("lease account cannot run %q: %v", q, err)
		}
	}
}
