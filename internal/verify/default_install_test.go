package verify_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/dsn"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/svcuser"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/verify"
)

// barshop is the schema of the check that found issue 14: foreign keys,
// CHECK constraints, an Aria table, a view, a trigger and a function, with
// 2,000 + 20,000 rows inserted by INSERT ... SELECT (InnoDB reserves their
// ids in batches: the counters stop at 2048 and 32768), rows deleted at the
// top of the ranges, and accounts of three kinds: the capturing account
// with global privileges only (the host's), an application account with
// privileges on barshop, and one with privileges on another database only.
var barshop = []string{
	"CREATE DATABASE barshop",
	"CREATE DATABASE other",
	"CREATE TABLE other.t (id INT PRIMARY KEY)",
	`CREATE TABLE barshop.customer (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40) NOT NULL,
	   email VARCHAR(80), CONSTRAINT ck_email CHECK (email LIKE '%@%')) ENGINE=InnoDB`,
	`CREATE TABLE barshop.orders (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, customer_id INT UNSIGNED NOT NULL,
	   total DECIMAL(10,2) NOT NULL CHECK (total >= 0), KEY ix_customer (customer_id),
	   CONSTRAINT fk_customer FOREIGN KEY (customer_id) REFERENCES barshop.customer (id)) ENGINE=InnoDB`,
	"CREATE TABLE barshop.audit (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, what VARCHAR(40)) ENGINE=Aria",
	"INSERT INTO barshop.customer (name, email) SELECT CONCAT('c', seq), CONCAT('c', seq, '@example.com') FROM barshop.seq_1_to_2000",
	"INSERT INTO barshop.orders (customer_id, total) SELECT 1 + seq % 1990, seq / 10 FROM barshop.seq_1_to_20000",
	"DELETE FROM barshop.orders WHERE id > 19990",
	"DELETE FROM barshop.customer WHERE id > 1995",
	"INSERT INTO barshop.audit (what) SELECT CONCAT('a', seq) FROM barshop.seq_1_to_100",
	"DELETE FROM barshop.audit WHERE id > 90",
	"CREATE DEFINER=`shop_owner`@`localhost` SQL SECURITY DEFINER VIEW barshop.big_orders AS SELECT id, total FROM barshop.orders WHERE total > 100",
	"CREATE DEFINER=`shop_owner`@`localhost` FUNCTION barshop.with_tax(x DECIMAL(10,2)) RETURNS DECIMAL(10,2) DETERMINISTIC RETURN x * 1.2",
	"CREATE DEFINER=`shop_owner`@`localhost` TRIGGER barshop.orders_ai AFTER INSERT ON barshop.orders FOR EACH ROW INSERT INTO barshop.audit (what) VALUES (CONCAT('order ', NEW.id))",
	"CREATE USER 'shop_owner'@'localhost' IDENTIFIED BY 'owner-pw'",
	"GRANT ALL ON barshop.* TO 'shop_owner'@'localhost'",
	"CREATE USER 'shop_app'@'%' IDENTIFIED BY 'app-pw'",
	"GRANT SELECT, INSERT, UPDATE ON barshop.orders TO 'shop_app'@'%'",
	"GRANT SELECT ON other.* TO 'shop_app'@'%'",
	"CREATE USER 'reporter'@'%' IDENTIFIED BY 'rep-pw'",
	"GRANT SELECT ON other.* TO 'reporter'@'%'",
	"CREATE USER 'cap'@'%' IDENTIFIED BY 'cap-secret'",
	"GRANT ALL ON *.* TO 'cap'@'%' WITH GRANT OPTION",
}

// TestDefaultInstallCapture is issue 14's check, automated: a source made
// by a default mariadb-install-db (anonymous accounts, root on the host's
// name), barshop on it, captured with --databases barshop by both methods
// as the account cap, with and without --with-passwords, and each template
// verified against the source (comparing passwords when they were
// carried): it must verify clean, with the source's AUTO_INCREMENT
// counters, the accounts of barshop and no other, and their passwords only
// when asked for.
func TestDefaultInstallCapture(t *testing.T) {
	bin := mariadbtest.Binary(t)
	installDB, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		t.Skip("mariadb-install-db not installed (apt-get install mariadb-server)")
	}
	if _, err := exec.LookPath("mariadb-backup"); err != nil {
		t.Skip("mariadb-backup not installed (apt-get install mariadb-backup)")
	}
	dir, err := mariadbtest.TempDir("/dev/shm", "pristine-default-install-")
	if err != nil {
		dir = mariadbtest.TestDir(t)
	} else {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	// A default install: name resolution and the anonymous accounts on;
	// only root's authentication is the password kind, so the test need
	// not run as the OS user root.
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"), "--tmpdir=" + dir, "--auth-root-authentication-method=normal",
		// Still a default install where the host name does not resolve (a
		// fresh chroot): --force only skips resolveip's check.
		"--force"}
	if os.Geteuid() == 0 {
		// As root, the data directory belongs to the servers' account
		// (docs/security.md), as every server pristine starts runs as it.
		acct, err := svcuser.Get()
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--user="+acct.Name)
		if err := acct.Own(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(installDB, args...).CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v: %s", err, out)
	}
	src, err := mariadb.Start(bin, mariadb.Config{Datadir: filepath.Join(dir, "data"), RunDir: filepath.Join(dir, "run"), Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := src.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	srcDB := mariadbtest.Open(t, src, "")
	var anon int
	if err := srcDB.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE User = ''").Scan(&anon); err != nil || anon == 0 {
		t.Fatalf("the default install has %d anonymous accounts (%v): the test needs them", anon, err)
	}
	for _, q := range barshop {
		if _, err := srcDB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st := newCorpusEnv(t).st
	// Over TCP: on the socket, ''@localhost matches before cap@'%'.
	srcURL := "mysql://cap:" + url.QueryEscape("cap-secret") + "@127.0.0.1:" + strconv.Itoa(src.Config.Port) + "/"
	for _, c := range []struct {
		method    string
		passwords bool
	}{{"logical", false}, {"physical", false}, {"logical", true}, {"physical", true}} {
		method := c.method
		if c.passwords {
			method += "-with-passwords"
		}
		t.Run(method, func(t *testing.T) {
			m, _, err := st.Build(ctx, template.BuildOptions{Name: "cap-" + method, Profile: mariadb.DefaultProfile(),
				Server: template.ServerSource{DSN: srcURL, Databases: []string{"barshop"}, Method: c.method, WithPasswords: c.passwords}})
			if err != nil {
				t.Fatalf("template build --from-server --databases barshop --method %s: %v", method, err)
			}
			r, err := st.Start(ctx, m, "default-install-"+method)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			db, err := r.Inst.Open("")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			rep, err := verify.Compare(ctx, verify.Side{DB: srcDB, Label: "source"}, verify.Side{DB: db, Label: "template cap-" + method},
				verify.Options{Pairs: []verify.Pair{{Source: "barshop", Target: "barshop"}}, Passwords: c.passwords})
			if err != nil {
				t.Fatalf("verify source template: %v", err)
			}
			for _, d := range rep.Diffs {
				t.Errorf("%s %s %s %s\n  source: %s\n  target: %s", d.Kind, d.Object, d.Part, d.Change, d.Source, d.Target)
			}
			for _, n := range rep.Notes {
				t.Errorf("not compared: %s", n)
			}
			if rep.Objects["user"] != 2 || rep.Objects["table"] != 3 {
				t.Errorf("compared %v: want the 3 tables and the 2 accounts of barshop (shop_owner, shop_app)", rep.Objects)
			}
			// The next ids the clone hands out are the source's.
			for _, tb := range []string{"customer", "orders", "audit"} {
				if a, b := nextID(t, srcDB, tb), nextID(t, db, tb); a != b {
					t.Errorf("next AUTO_INCREMENT of barshop.%s: source %s, template %s", tb, a, b)
				}
			}
			if got := nextID(t, db, "orders"); got != "32768" {
				t.Errorf("next AUTO_INCREMENT of barshop.orders in the template = %s, want 32768 (the source's batch)", got)
			}
			var accts string
			if err := db.QueryRow("SELECT GROUP_CONCAT(CONCAT(User, '@', Host) ORDER BY User, Host) FROM mysql.user WHERE User NOT IN ('root', 'mariadb.sys', 'PUBLIC', 'pristine', 'pristine_owner', '')").Scan(&accts); err != nil {
				t.Fatal(err)
			}
			if accts != "shop_app@%,shop_owner@localhost" {
				t.Errorf("the template's accounts are %q, want those of barshop only (shop_app@%%,shop_owner@localhost): cap and reporter are not barshop's", accts)
			}
			// The application's password works in the template only when
			// the build carried the hashes.
			app, err := sql.Open("mysql", dsn.TCP(r.Inst.Config.Port, "shop_app", "app-pw", ""))
			if err != nil {
				t.Fatal(err)
			}
			loginErr := app.PingContext(ctx)
			app.Close()
			if c.passwords && loginErr != nil {
				t.Errorf("built --with-passwords: shop_app cannot log in with its password: %v", loginErr)
			}
			if !c.passwords && loginErr == nil {
				t.Errorf("built without --with-passwords: shop_app logs in with the source's password")
			}
			var grants []string
			rows, err := db.Query("SHOW GRANTS FOR 'shop_app'@'%'")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var g string
				rows.Scan(&g)
				grants = append(grants, g)
			}
			rows.Close()
			if s := strings.Join(grants, "\n"); strings.Contains(s, "`other`") {
				t.Errorf("shop_app's grant on database other was carried:\n%s", s)
			}
		})
	}
}

// nextID is a table's next AUTO_INCREMENT value in barshop.
func nextID(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var v sql.NullString
	if err := db.QueryRow("SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'barshop' AND TABLE_NAME = ?", table).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v.String
}
