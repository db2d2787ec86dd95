package mariadb_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/dsn"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

func TestSecureAccounts(t *testing.T) {
	in := mariadbtest.Start(t)
	db := mariadbtest.Open(t, in, "")
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'",
		"CREATE USER ''@'localhost'",
		"CREATE USER 'root'@'%' IDENTIFIED BY 'known'",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'%'",
		"CREATE USER 'app'@'%' IDENTIFIED BY 'app'",
		"CREATE DATABASE d",
		"CREATE TABLE d.t (a INT)",
		"INSERT INTO d.t VALUES (7)",
		"CREATE DEFINER='root'@'%' SQL SECURITY DEFINER VIEW d.v AS SELECT a FROM d.t",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const secret = "0123456789abcdef0123456789abcdef"
	if err := mariadb.SecureAccounts(context.Background(), db, secret, false); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", dsn.Socket(in.Config.Socket(), "root", secret, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var accounts string
	// MariaDB keeps an account's lock in mysql.global_priv, MySQL in
	// mysql.user.
	q := `SELECT GROUP_CONCAT(CONCAT(User, '@', Host, ':', COALESCE(JSON_VALUE(Priv, '$.account_locked'), '0')) ORDER BY User, Host)
		FROM mysql.global_priv WHERE User IN ('root', '', 'app')`
	if in.Binary.Flavor == mariadb.MySQL {
		q = `SELECT GROUP_CONCAT(CONCAT(User, '@', Host, ':', IF(account_locked = 'Y', '1', '0')) ORDER BY User, Host)
		FROM mysql.user WHERE User IN ('root', '', 'app')`
	}
	if err := admin.QueryRow(q).Scan(&accounts); err != nil {
		t.Fatal(err)
	}
	// root@127.0.0.1 and the anonymous account are gone; root@% is the
	// view's DEFINER, so it stays, locked; app is not pristine's business.
	if want := "app@%:0,root@%:1,root@localhost:0"; accounts != want {
		t.Errorf("accounts after SecureAccounts: %s, want %s", accounts, want)
	}
	var a int
	if err := admin.QueryRow("SELECT a FROM d.v").Scan(&a); err != nil || a != 7 {
		t.Errorf("the view whose DEFINER was locked: %d, %v", a, err)
	}
	for _, c := range []struct{ user, pass string }{{"root", ""}, {"root", "known"}} {
		other, err := sql.Open("mysql", dsn.TCP(in.Config.Port, c.user, c.pass, ""))
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Ping(); err == nil || !strings.Contains(err.Error(), "1045") && !strings.Contains(err.Error(), "4151") {
			t.Errorf("%s with password %q over TCP: %v, want refused", c.user, c.pass, err)
		}
		other.Close()
	}
}

// A MySQL server's new passwords are hashed in the fewest rounds
// caching_sha2_password takes (5,000, written 005 in the stored hash),
// where MySQL 9 has 10,000: a lease's new password and its first login
// each cost the server one hash.
func TestPasswordHashRounds(t *testing.T) {
	in := mariadbtest.Start(t)
	if !in.Binary.Flavor.CachesLogins() {
		t.Skipf("%s hashes passwords once, in no rounds to set", in.Binary.Flavor)
	}
	db := mariadbtest.Open(t, in, "")
	if _, err := db.Exec("CREATE USER 'rounds'@'%' IDENTIFIED BY 'x'"); err != nil {
		t.Fatal(err)
	}
	var prefix string
	if err := db.QueryRow("SELECT LEFT(authentication_string, 7) FROM mysql.user WHERE user = 'rounds'").Scan(&prefix); err != nil {
		t.Fatal(err)
	}
	if prefix != "$A$005$" {
		t.Errorf("the stored hash starts %q, want $A$005$ (5,000 rounds)", prefix)
	}
}
