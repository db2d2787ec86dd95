package pool_test

// The definer gadget (issue 20, finding 2): a template's view, trigger,
// routine or event that runs as root (SQL SECURITY DEFINER with root as
// DEFINER, which objects created without a DEFINER get) reads a table the
// lease owns; the lease puts an INVOKER view calling its own function in
// the table's place, and the function runs as root. These tests play the
// lease and must never see their code run as an account with more than a
// lease has.

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// gadgetSchema is the review's template: foreign keys, a view and a
// trigger created without a DEFINER (so the loader's root@localhost), a
// root-definer function, procedure and view, a view of the build account,
// an event, and an account of the template's own with global privileges
// (SELECT, INSERT, EXECUTE, enough to run the lease's function, and
// SHUTDOWN; and a role it may SET ROLE to with more) as the DEFINER of a
// view; and an account with database-level grants on every database
// (`%`, which also matches mysql) as the DEFINER of another; and a view
// of root whose table is gone, which the lease could create; and global
// and mysql privileges granted to PUBLIC, which every account has.
const gadgetSchema = `CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(50), email VARCHAR(80)) ENGINE=InnoDB;
INSERT INTO customers VALUES (1, 'ann', 'ann@example.com'), (2, 'bob', 'bob@example.com');
CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, total DECIMAL(10,2), FOREIGN KEY (customer_id) REFERENCES customers (id)) ENGINE=InnoDB;
INSERT INTO orders VALUES (1, 1, 10.00), (2, 2, 20.00), (3, 1, 5.00);
CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(100)) ENGINE=InnoDB;
CREATE TABLE ticks (id INT AUTO_INCREMENT PRIMARY KEY, n INT) ENGINE=InnoDB;
CREATE VIEW order_totals AS SELECT c.id, c.name, SUM(o.total) AS total FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id, c.name;
CREATE TRIGGER orders_ai AFTER INSERT ON orders FOR EACH ROW INSERT INTO audit (what) VALUES (CONCAT('order ', NEW.id));
CREATE TRIGGER orders_ai2 AFTER INSERT ON orders FOR EACH ROW FOLLOWS orders_ai INSERT INTO audit (what) VALUES (CONCAT('second ', NEW.id));
CREATE DEFINER='root'@'localhost' SQL SECURITY DEFINER VIEW root_view AS SELECT id, name FROM customers WHERE id > 0 WITH CASCADED CHECK OPTION;
CREATE DEFINER='root'@'localhost' FUNCTION root_count() RETURNS INT READS SQL DATA SQL SECURITY DEFINER RETURN (SELECT COUNT(*) FROM customers);
CREATE DEFINER='root'@'localhost' PROCEDURE root_proc() SQL SECURITY DEFINER SELECT COUNT(*) FROM customers;
CREATE DEFINER='pristine'@'%' SQL SECURITY DEFINER VIEW build_view AS SELECT id, email FROM customers;
CREATE EVENT tick ON SCHEDULE EVERY 1 SECOND DO INSERT INTO ticks (n) SELECT COUNT(*) FROM customers;
CREATE ROLE boss;
GRANT SUPER, PROCESS ON *.* TO boss;
GRANT SELECT ON mysql.* TO boss;
CREATE USER 'reporter'@'%' IDENTIFIED BY 'reporter-pw';
GRANT SELECT, INSERT, EXECUTE, SHUTDOWN ON *.* TO 'reporter'@'%';
GRANT SELECT ON mysql.global_priv TO 'reporter'@'%';
GRANT boss TO 'reporter'@'%';
CREATE DEFINER='reporter'@'%' SQL SECURITY DEFINER VIEW reporter_view AS SELECT id, name FROM customers;
GRANT PROCESS ON *.* TO PUBLIC;
GRANT SELECT ON mysql.* TO PUBLIC;
CREATE TABLE gone (a INT);
CREATE VIEW broken_view AS SELECT a FROM gone;
DROP TABLE gone;
CREATE USER 'auditor'@'%' IDENTIFIED BY 'auditor-pw';
GRANT SELECT, INSERT, EXECUTE ON ` + "`%`" + `.* TO 'auditor'@'%';
CREATE DEFINER='auditor'@'%' SQL SECURITY DEFINER VIEW auditor_view AS SELECT id, name FROM customers;
`

// gadgetSchemaFor is gadgetSchema in the server's terms. MySQL has no
// PUBLIC and no mysql.global_priv: PUBLIC's grants go to public_role,
// made mandatory (mandatory_roles, persisted in the data directory: every
// account has it, as every account has PUBLIC's grants); boss has a
// dynamic privilege beside a static one, and reporter may read
// mysql.user.
func gadgetSchemaFor(mysql bool) string {
	if !mysql {
		return gadgetSchema
	}
	s := strings.NewReplacer(
		"GRANT SUPER, PROCESS ON *.* TO boss;", "GRANT PROCESS, SYSTEM_VARIABLES_ADMIN ON *.* TO boss;",
		"mysql.global_priv", "mysql.user",
		"GRANT PROCESS ON *.* TO PUBLIC;\n", "",
		"GRANT SELECT ON mysql.* TO PUBLIC;\n", "",
	).Replace(gadgetSchema)
	return s + "CREATE ROLE public_role;\nGRANT PROCESS ON *.* TO public_role;\nGRANT SELECT ON mysql.* TO public_role;\nSET PERSIST mandatory_roles = 'public_role';\n"
}

// gadgetPool is a one-slot pool of gadgetSchemaFor with the event
// scheduler on, and its lease.
func gadgetPool(t *testing.T) (*template.Builder, *catalog.Meta, *pool.Lease) {
	t.Helper()
	st := templatetest.NewBuilder(t, "auto")
	prof := mariadb.DefaultProfile()
	prof.Options = []string{"event_scheduler=ON"}
	m := templatetest.Build(t, st, "app", gadgetSchemaFor(st.Binary().Flavor == mariadb.MySQL), template.BuildOptions{Profile: prof})
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	return st, m, lease(t, p)
}

// slotAdmin connects to the lease's slot as root, as pristine does.
func slotAdmin(t *testing.T, st *template.Builder, l *pool.Lease) *sql.DB {
	t.Helper()
	admin, err := sql.Open("mysql", dsn.Socket(l.Socket, "root", st.Catalog().Admin(), ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return admin
}

// mustExec runs each statement as the lease; the attack's setup must work.
func mustExec(t *testing.T, db *sql.Conn, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("lease: %s: %v", q, err)
		}
	}
}

// lootFunctionFor is lootFunction in the server's terms: MySQL's accounts
// are in mysql.user.
func lootFunctionFor(t *testing.T) string {
	if mariadbtest.Binary(t).Flavor == mariadb.MySQL {
		return strings.ReplaceAll(lootFunction, "mysql.global_priv", "mysql.user")
	}
	return lootFunction
}

// lootFunction is the lease's function: it records who runs it.
const lootFunction = `CREATE FUNCTION f() RETURNS INT SQL SECURITY INVOKER MODIFIES SQL DATA BEGIN
  DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END;
  INSERT INTO loot SELECT CURRENT_USER();
  INSERT INTO loot SELECT CONCAT('read mysql.global_priv as ', CURRENT_USER()) FROM mysql.global_priv LIMIT 1;
  RETURN 1;
END`

// checkLoot fails the test for every account in loot that has more than
// a lease: root, an administrative account, any account with a global
// privilege or a privilege on the mysql schema. It returns the accounts.
func checkLoot(t *testing.T, admin *sql.DB, l *pool.Lease) []string {
	t.Helper()
	rows, err := admin.Query("SELECT DISTINCT u FROM " + l.Database + ".loot")
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	rows.Close()
	for _, u := range users {
		if strings.HasPrefix(u, "read mysql.") {
			t.Errorf("the lease's function could %s", u)
			continue
		}
		user, host := mariadb.SplitDefiner(u)
		if user == "root" {
			t.Errorf("the lease's function ran as %s", u)
			continue
		}
		access, err := globalPrivileges(admin, user, host)
		if err != nil {
			t.Errorf("the lease's function ran as %s, whose privileges cannot be read: %v", u, err)
			continue
		}
		if access != 0 {
			t.Errorf("the lease's function ran as %s, which has global privileges (access %d)", u, access)
			continue
		}
		var onMysql int
		if err := admin.QueryRow(`SELECT (SELECT COUNT(*) FROM mysql.db WHERE User = ? AND Host = ? AND Db = 'mysql' AND Select_priv = 'Y')
			+ (SELECT COUNT(*) FROM mysql.tables_priv WHERE User = ? AND Host = ? AND Db = 'mysql')`, user, host, user, host).Scan(&onMysql); err != nil {
			t.Fatal(err)
		}
		if onMysql != 0 {
			t.Errorf("the lease's function ran as %s, which has privileges on the mysql schema", u)
		}
		if u != l.User+"@%" && u != mariadb.OwnerUser+"@"+mariadb.OwnerHost {
			t.Logf("the lease's function ran as %s (no global privilege)", u)
		}
	}
	return users
}

// globalPrivileges is an account's global privileges as a number, 0 for
// none: MariaDB's access bits in mysql.global_priv; on MySQL, the count of
// its Y columns in mysql.user and its rows in mysql.global_grants.
func globalPrivileges(admin *sql.DB, user, host string) (int64, error) {
	var v string
	if err := admin.QueryRow("SELECT VERSION()").Scan(&v); err != nil {
		return 0, err
	}
	if strings.Contains(strings.ToLower(v), "mariadb") {
		var access sql.NullInt64
		err := admin.QueryRow("SELECT JSON_VALUE(Priv, '$.access') FROM mysql.global_priv WHERE User = ? AND Host = ?", user, host).Scan(&access)
		return access.Int64, err
	}
	rows, err := admin.Query("SELECT * FROM mysql.user WHERE User = ? AND Host = ?", user, host)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	if !rows.Next() {
		return 0, fmt.Errorf("no account %s@%s", user, host)
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return 0, err
	}
	var n int64
	for i, c := range cols {
		if strings.HasSuffix(c, "_priv") && string(vals[i]) == "Y" {
			n++
		}
	}
	rows.Close()
	var dyn int64
	if err := admin.QueryRow("SELECT COUNT(*) FROM mysql.global_grants WHERE USER = ? AND HOST = ?", user, host).Scan(&dyn); err != nil {
		return 0, err
	}
	return n + dyn, nil
}

// TestSecurityDefinerGadgetView: the review's reproduction through the
// default-definer view order_totals, then through the root view, the
// root function and procedure and the build account's view.
func TestSecurityDefinerGadgetView(t *testing.T) {
	st, _, l := gadgetPool(t)
	admin := slotAdmin(t, st, l)
	db := open(t, l)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mustExec(t, c,
		"CREATE TABLE loot (u VARCHAR(200))",
		lootFunctionFor(t),
		"CREATE TABLE customers_real LIKE customers",
		"INSERT INTO customers_real SELECT * FROM customers",
		"SET FOREIGN_KEY_CHECKS=0",
		"DROP TABLE customers",
		"CREATE SQL SECURITY INVOKER VIEW customers AS SELECT id, name, email FROM customers_real WHERE f()=1",
		"CREATE SQL SECURITY INVOKER VIEW gone AS SELECT f() AS a",
	)
	for _, q := range []string{
		"SELECT * FROM order_totals",
		"SELECT * FROM root_view",
		"SELECT root_count()",
		"CALL root_proc()",
		"SELECT * FROM build_view",
		"SELECT * FROM reporter_view",
		"SELECT * FROM auditor_view",
		"SELECT * FROM broken_view",
	} {
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			t.Logf("%s: %v", q, err) // refused is fine: the loot is what counts
			continue
		}
		for rows.Next() {
		}
		rows.Close()
	}
	// The event reads customers every second as its DEFINER.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := admin.QueryRow("SELECT COUNT(*) FROM app.loot WHERE u NOT LIKE 'lease\\_%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	users := checkLoot(t, admin, l)
	if len(users) == 0 {
		t.Fatal("the lease's function never ran: the probe proves nothing")
	}
	// The probe reached the objects' own context: their DEFINER is the
	// template's owner account, which has what the lease has.
	if !contains(users, mariadb.OwnerUser+"@"+mariadb.OwnerHost) {
		t.Errorf("loot %v: no object ran the lease's function as %s@%s", users, mariadb.OwnerUser, mariadb.OwnerHost)
	}
	// The template's own DEFINER keeps its name, without its global
	// privileges.
	for _, u := range []string{"reporter@%", "auditor@%"} {
		if !contains(users, u) {
			t.Errorf("loot %v: the view of %s did not run the lease's function as it", users, u)
		}
	}
}

// TestSecurityDefinerGadgetTrigger: the trigger path, an INVOKER view
// WITH CHECK OPTION in place of the table the default-definer trigger
// writes.
func TestSecurityDefinerGadgetTrigger(t *testing.T) {
	st, _, l := gadgetPool(t)
	admin := slotAdmin(t, st, l)
	db := open(t, l)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mustExec(t, c,
		"CREATE TABLE loot (u VARCHAR(200))",
		lootFunctionFor(t),
		"CREATE TABLE audit_real LIKE audit",
		"DROP TABLE audit",
		"CREATE SQL SECURITY INVOKER VIEW audit AS SELECT id, what FROM audit_real WHERE f()=1 WITH CHECK OPTION",
	)
	if _, err := c.ExecContext(ctx, "INSERT INTO orders VALUES (10, 1, 1.00)"); err != nil {
		t.Logf("insert through the trigger: %v", err)
	}
	users := checkLoot(t, admin, l)
	if len(users) == 0 {
		t.Fatal("the lease's function never ran: the probe proves nothing")
	}
}

// TestSecurityDefinerOwner: the owner account has exactly a lease's
// grants, nobody logs in as it, and a lease cannot name it (or root) as
// DEFINER; the DEFINERs of the template's own accounts have no global
// privilege, and no role they can set has one.
func TestSecurityDefinerOwner(t *testing.T) {
	st, m, l := gadgetPool(t)
	admin := slotAdmin(t, st, l)
	grants := func(who string) []string {
		rows, err := admin.Query("SHOW GRANTS FOR " + who)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				t.Fatal(err)
			}
			g = g[:strings.LastIndex(g, " TO ")] // without the grantee
			out = append(out, g)
		}
		sort.Strings(out) // the server's order is its hash's
		return out
	}
	owner := fmt.Sprintf("'%s'@'%s'", mariadb.OwnerUser, mariadb.OwnerHost)
	want := []string{"GRANT USAGE ON *.*"}
	for _, g := range pool.LeaseGrants(m.Database(), false) {
		want = append(want, "GRANT "+g)
	}
	if got := grants(owner); strings.Join(got, "\n") != strings.Join(grants("'"+l.User+"'@'%'"), "\n") {
		t.Errorf("owner grants:\n%s\nlease grants:\n%s\nwant %v", strings.Join(got, "\n"), strings.Join(grants("'"+l.User+"'@'%'"), "\n"), want)
	}
	my := st.Binary().Flavor == mariadb.MySQL
	lockedQ, accounts := "SELECT JSON_VALUE(Priv, '$.account_locked') FROM mysql.global_priv WHERE User = ? AND Host = ?", "mysql.global_priv"
	reduced := []string{"'reporter'@'%'", "'boss'", "'auditor'@'%'", "PUBLIC"}
	if my {
		lockedQ, accounts = "SELECT account_locked FROM mysql.user WHERE User = ? AND Host = ?", "mysql.user"
		reduced = []string{"'reporter'@'%'", "'boss'@'%'", "'auditor'@'%'", "'public_role'@'%'"}
	}
	var locked string
	if err := admin.QueryRow(lockedQ, mariadb.OwnerUser, mariadb.OwnerHost).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	if locked != "true" && locked != "1" && locked != "Y" {
		t.Errorf("the owner account is not locked: account_locked=%s", locked)
	}
	for _, pw := range []string{"", m.Password} {
		o, err := sql.Open("mysql", dsn.Socket(l.Socket, mariadb.OwnerUser, pw, ""))
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Ping(); err == nil {
			t.Errorf("logged in as the owner account with password %q", pw)
		}
		o.Close()
	}
	db := open(t, l)
	for _, q := range []string{
		"CREATE DEFINER='" + mariadb.OwnerUser + "'@'" + mariadb.OwnerHost + "' SQL SECURITY DEFINER VIEW mine AS SELECT 1",
		"CREATE DEFINER='reporter'@'%' SQL SECURITY DEFINER VIEW mine2 AS SELECT 1",
		"ALTER SQL SECURITY INVOKER VIEW order_totals AS SELECT 1 AS x",
	} {
		if _, err := db.Exec(q); err == nil || !privilegeError(err) {
			t.Errorf("lease: %s: %v, want a privilege error", q, err)
		}
	}
	if _, err := db.Exec("SELECT COUNT(*) FROM " + accounts); err == nil || !privilegeError(err) {
		t.Errorf("lease reads %s (PUBLIC's or the mandatory role's grant on mysql.*): %v", accounts, err)
	}
	for _, a := range reduced {
		for _, g := range grants(a) {
			if strings.Contains(g, " ON *.*") && !strings.HasPrefix(g, "GRANT USAGE ON *.*") {
				t.Errorf("%s keeps a global privilege: %s", a, g)
			}
			if strings.Contains(g, "`mysql`") && !strings.HasPrefix(g, "GRANT SHOW VIEW ON `mysql`.*") {
				t.Errorf("%s keeps a privilege on mysql: %s", a, g)
			}
		}
	}
	if m.Definers == nil || len(m.Definers.Reowned) == 0 || len(m.Definers.Reduced) == 0 || len(m.Definers.Dropped) != 1 {
		t.Errorf("meta.json does not record the re-owned objects, reduced definers and the dropped view: %+v", m.Definers)
	}
	if len(m.Warnings) == 0 || !strings.Contains(strings.Join(m.Warnings, "\n"), "broken_view") {
		t.Errorf("the build did not warn about the dropped broken_view: %q", m.Warnings)
	}
}

// TestSecurityDefinerObjectsStillWork: the template's objects work for a
// lease after re-owning: views read, triggers fire in their order,
// routines run, the event fires, and a reduced DEFINER's view still reads
// (its global SELECT became SELECT on every database).
func TestSecurityDefinerObjectsStillWork(t *testing.T) {
	st, _, l := gadgetPool(t)
	admin := slotAdmin(t, st, l)
	db := open(t, l)
	db.SetMaxOpenConns(1)
	var n int
	var s string
	if err := db.QueryRow("SELECT COUNT(*), GROUP_CONCAT(total ORDER BY id) FROM order_totals").Scan(&n, &s); err != nil || n != 2 || s != "15.00,20.00" {
		t.Errorf("order_totals: %d rows %q, %v", n, s, err)
	}
	for _, q := range []string{"SELECT COUNT(*) FROM root_view", "SELECT root_count()", "SELECT COUNT(*) FROM build_view", "SELECT COUNT(*) FROM reporter_view", "SELECT COUNT(*) FROM auditor_view"} {
		if err := db.QueryRow(q).Scan(&n); err != nil || n != 2 {
			t.Errorf("%s = %d, %v; want 2", q, n, err)
		}
	}
	if _, err := db.Exec("CALL root_proc()"); err != nil {
		t.Errorf("CALL root_proc(): %v", err)
	}
	if _, err := db.Exec("INSERT INTO root_view VALUES (0, 'zero')"); err == nil {
		t.Error("root_view's CHECK OPTION was lost")
	}
	if _, err := db.Exec("INSERT INTO orders VALUES (20, 2, 2.00)"); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT GROUP_CONCAT(what ORDER BY id) FROM audit WHERE what LIKE '%20'").Scan(&s); err != nil || s != "order 20,second 20" {
		t.Errorf("the triggers wrote %q (%v), want \"order 20,second 20\"", s, err)
	}
	rows, err := admin.Query(`SELECT CONCAT(kind, ' ', name, ' ', definer) FROM (
		SELECT 'view' kind, TABLE_NAME name, DEFINER definer FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'app'
		UNION ALL SELECT 'trigger', TRIGGER_NAME, DEFINER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'app'
		UNION ALL SELECT 'routine', ROUTINE_NAME, DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'app'
		UNION ALL SELECT 'event', EVENT_NAME, DEFINER FROM information_schema.EVENTS WHERE EVENT_SCHEMA = 'app') x ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	owner := mariadb.OwnerUser + "@" + mariadb.OwnerHost
	for rows.Next() {
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(s, " "+owner) && !strings.HasSuffix(s, " reporter@%") && !strings.HasSuffix(s, " auditor@%") {
			t.Errorf("%s: want DEFINER %s", s, owner)
		}
	}
	rows.Close()
	var before, after int
	if err := db.QueryRow("SELECT COUNT(*) FROM ticks").Scan(&before); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for after <= before && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if err := db.QueryRow("SELECT COUNT(*) FROM ticks").Scan(&after); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Errorf("the event did not fire in the slot within 5s (ticks %d -> %d)", before, after)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestSecurityDefinerGadgetCapture: the same swap in a template captured
// from a live server (logical, and physical where mariadb-backup is
// installed, or through MySQL's clone plugin), whose view and trigger the source's root made and whose
// reporting account has global privileges: the capture keeps their names,
// the build re-owns or reduces them.
func TestSecurityDefinerGadgetCapture(t *testing.T) {
	src := mariadbtest.Start(t)
	sdb := mariadbtest.Open(t, src, "")
	mariadbtest.Exec(t, sdb,
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(50)) ENGINE=InnoDB",
		"INSERT INTO shop.customers VALUES (1, 'ann'), (2, 'bob')",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer_id INT, total INT, FOREIGN KEY (customer_id) REFERENCES shop.customers (id)) ENGINE=InnoDB",
		"INSERT INTO shop.orders VALUES (1, 1, 10), (2, 2, 20)",
		"CREATE TABLE shop.audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(100)) ENGINE=InnoDB",
		"CREATE VIEW shop.order_totals AS SELECT c.id, c.name, SUM(o.total) AS total FROM shop.customers c JOIN shop.orders o ON o.customer_id = c.id GROUP BY c.id, c.name",
		"CREATE TRIGGER shop.orders_ai AFTER INSERT ON shop.orders FOR EACH ROW INSERT INTO shop.audit (what) VALUES (CONCAT('order ', NEW.id))",
		"CREATE USER 'reporter'@'%' IDENTIFIED BY 'reporter-pw'",
		"GRANT SELECT, INSERT, EXECUTE, SHUTDOWN ON *.* TO 'reporter'@'%'",
		"GRANT SELECT ON shop.* TO 'reporter'@'%'",
		"CREATE DEFINER='reporter'@'%' SQL SECURITY DEFINER VIEW shop.reporter_view AS SELECT id, name FROM shop.customers",
	)
	for _, method := range []string{"logical", "physical"} {
		t.Run(method, func(t *testing.T) {
			source := "mysql://root@localhost/?socket=" + src.Config.Socket()
			if method == "physical" && src.Binary.Flavor == mariadb.MySQL {
				// The clone plugin reads the source over TCP, as an
				// account with BACKUP_ADMIN.
				var n int
				if err := sdb.QueryRow("SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone' AND PLUGIN_STATUS = 'ACTIVE'").Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					mariadbtest.Exec(t, sdb, "INSTALL PLUGIN clone SONAME 'mysql_clone.so'")
				}
				mariadbtest.Exec(t, sdb, "CREATE USER IF NOT EXISTS cloner@'127.0.0.1' IDENTIFIED BY 'cloner-pw'",
					"GRANT BACKUP_ADMIN, SELECT, SHOW VIEW, EVENT, TRIGGER, RELOAD, PROCESS, REPLICATION CLIENT ON *.* TO cloner@'127.0.0.1'")
				source = fmt.Sprintf("mysql://cloner:cloner-pw@127.0.0.1:%d/", src.Config.Port)
			} else if _, err := exec.LookPath("mariadb-backup"); err != nil && method == "physical" {
				t.Skip("mariadb-backup is not installed: physical capture cannot be tested")
			}
			st := templatetest.NewBuilder(t, "auto")
			m, _, err := st.Build(context.Background(), template.BuildOptions{Name: "shop", Profile: mariadb.DefaultProfile(),
				Server: template.ServerSource{DSN: source, Databases: []string{"shop"}, Method: method}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Down(context.Background())
			l := lease(t, p)
			admin := slotAdmin(t, st, l)
			ctx := context.Background()
			c, err := open(t, l).Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			mustExec(t, c,
				"CREATE TABLE loot (u VARCHAR(200))",
				lootFunctionFor(t),
				"CREATE TABLE customers_real LIKE customers",
				"INSERT INTO customers_real SELECT * FROM customers",
				"SET FOREIGN_KEY_CHECKS=0",
				"DROP TABLE customers",
				"CREATE SQL SECURITY INVOKER VIEW customers AS SELECT id, name FROM customers_real WHERE f()=1",
				"CREATE TABLE audit_real LIKE audit",
				"DROP TABLE audit",
				"CREATE SQL SECURITY INVOKER VIEW audit AS SELECT id, what FROM audit_real WHERE f()=1 WITH CHECK OPTION",
			)
			for _, q := range []string{"SELECT * FROM order_totals", "SELECT * FROM reporter_view", "INSERT INTO orders VALUES (10, 1, 1)"} {
				if _, err := c.ExecContext(ctx, q); err != nil {
					t.Logf("%s: %v", q, err)
				}
			}
			users := checkLoot(t, admin, l)
			for _, u := range []string{mariadb.OwnerUser + "@" + mariadb.OwnerHost, "reporter@%"} {
				if !contains(users, u) {
					t.Errorf("loot %v: no object ran the lease's function as %s: the probe proves less than it should", users, u)
				}
			}
		})
	}
}
