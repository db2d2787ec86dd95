package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/pristinedb/pristine/internal/quote"
)

// The definer pass (SecureDefiners) in MySQL 8/9's terms. MySQL keeps
// stored objects in its data dictionary, not in tables pristine may
// update: a routine is dropped and created again from SHOW CREATE with the
// owner as DEFINER (its grants in mysql.procs_priv put back as they were),
// an event is given the owner by ALTER DEFINER=... EVENT with its own
// comment repeated (ALTER EVENT needs one clause), a view by ALTER VIEW
// from SHOW CREATE VIEW (information_schema.VIEWS has no algorithm in
// MySQL). Privileges are in mysql.user's *_priv columns and
// mysql.global_grants (dynamic privileges); roles are accounts, granted by
// mysql.role_edges; MySQL has no PUBLIC, but every account gets the roles
// of mandatory_roles, which are reduced as PUBLIC is on MariaDB.

// definedObjectsMySQL lists every view, trigger, routine and event with its
// DEFINER from MySQL's information_schema (which reads the data
// dictionary; EVENTS answers with the event scheduler off too).
func definedObjectsMySQL(ctx context.Context, c *sql.Conn) ([]definedObject, error) {
	var out []definedObject
	for _, q := range []struct{ what, q string }{
		{"views", "SELECT 'view', TABLE_SCHEMA, TABLE_NAME, DEFINER, '' FROM information_schema.VIEWS"},
		{"triggers", "SELECT 'trigger', TRIGGER_SCHEMA, TRIGGER_NAME, DEFINER, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS"},
		{"routines", "SELECT ROUTINE_TYPE, ROUTINE_SCHEMA, ROUTINE_NAME, DEFINER, '' FROM information_schema.ROUTINES"},
		{"events", "SELECT 'event', EVENT_SCHEMA, EVENT_NAME, DEFINER, '' FROM information_schema.EVENTS"},
	} {
		rows, err := c.QueryContext(ctx, q.q)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", q.what, err)
		}
		for rows.Next() {
			var o definedObject
			var definer string
			if err := rows.Scan(&o.kind, &o.schema, &o.name, &definer, &o.table); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list %s: %w", q.what, err)
			}
			o.kind = strings.ToLower(o.kind)
			o.user, o.host = SplitDefiner(definer)
			out = append(out, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("list %s: %w", q.what, err)
		}
	}
	return out, nil
}

var createAlgorithm = regexp.MustCompile(`(?i)^\s*CREATE\s+ALGORITHM\s*=\s*(\w+)\s+`)

// reownViewMySQL gives a view the owner as DEFINER: ALTER VIEW with the
// rest of SHOW CREATE VIEW (algorithm, SQL SECURITY, column list, query,
// check option), in the view's character sets. A view the server cannot
// show or re-create (it names a table that is gone) is dropped, and ok is
// false.
func reownViewMySQL(ctx context.Context, c *sql.Conn, o definedObject, owner string) (ok bool, err error) {
	var name, stmt, cs, coll string
	showErr := c.QueryRowContext(ctx, "SHOW CREATE VIEW "+quote.Qualified(o.schema, o.name)).Scan(&name, &stmt, &cs, &coll)
	if showErr == nil {
		m := createAlgorithm.FindStringSubmatch(stmt)
		if m == nil {
			return false, fmt.Errorf("secure definers: SHOW CREATE VIEW %s: no ALGORITHM in %.60q", o, stmt)
		}
		rest, cerr := cutDefiner("CREATE " + stmt[len(m[0]):])
		if cerr != nil {
			return false, fmt.Errorf("secure definers: view %s: %w", o, cerr)
		}
		if _, err := c.ExecContext(ctx, "USE "+quote.Ident(o.schema)); err != nil {
			return false, fmt.Errorf("secure definers: %w", err)
		}
		if err := useCharset(ctx, c, cs, coll, rest); err != nil {
			return false, fmt.Errorf("secure definers: %w", err)
		}
		_, err = c.ExecContext(ctx, "ALTER ALGORITHM="+m[1]+" DEFINER="+owner+" "+rest)
		if rerr := resetCharset(ctx, c); rerr != nil && err == nil {
			err = rerr
		}
		if err == nil {
			return true, nil
		}
	}
	// A view whose tables or functions are gone cannot be shown or
	// altered; left with its administrative DEFINER it would run, as that
	// account, whatever a lease puts in their place.
	if _, derr := c.ExecContext(ctx, "DROP VIEW "+quote.Qualified(o.schema, o.name)); derr != nil {
		return false, fmt.Errorf("secure definers: re-own %s: %v %v; and it cannot be dropped: %w", o, showErr, err, derr)
	}
	return false, nil
}

// routineGrant is one row of mysql.procs_priv: who may run or alter a
// routine.
type routineGrant struct {
	user, host, privs string
}

// reownRoutineMySQL drops a procedure or function and creates it again
// with the owner as DEFINER, its sql_mode and character sets, and puts its
// grants (mysql.procs_priv) back as they were: DROP takes them, and CREATE
// gives its creator EXECUTE and ALTER ROUTINE (automatic_sp_privileges).
func reownRoutineMySQL(ctx context.Context, c *sql.Conn, o definedObject, owner string) error {
	typ := strings.ToUpper(o.kind)
	what := typ + " " + quote.Qualified(o.schema, o.name)
	var name, sqlMode, stmt, cs, coll, dbColl sql.NullString
	if err := c.QueryRowContext(ctx, "SHOW CREATE "+what).Scan(&name, &sqlMode, &stmt, &cs, &coll, &dbColl); err != nil {
		return fmt.Errorf("SHOW CREATE %s: %w", what, err)
	}
	if !stmt.Valid {
		return fmt.Errorf("SHOW CREATE %s shows no body: root must see it", what)
	}
	rest, err := cutDefiner(stmt.String)
	if err != nil {
		return err
	}
	grants, err := routineGrants(ctx, c, o.schema, o.name, typ)
	if err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "USE "+quote.Ident(o.schema)); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "DROP "+what); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "SET SESSION sql_mode = "+quote.String(sqlMode.String)); err != nil {
		return err
	}
	if err := useCharset(ctx, c, cs.String, coll.String, rest); err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, "CREATE DEFINER="+owner+" "+rest)
	if rerr := resetCharset(ctx, c); rerr != nil && err == nil {
		err = rerr
	}
	if _, merr := c.ExecContext(ctx, "SET SESSION sql_mode = ''"); merr != nil && err == nil {
		err = merr
	}
	if err != nil {
		return fmt.Errorf("create %s again (it is dropped: build the template again): %w", what, err)
	}
	now, err := routineGrants(ctx, c, o.schema, o.name, typ)
	if err != nil {
		return err
	}
	for _, g := range now {
		if _, err := c.ExecContext(ctx, "REVOKE ALL PRIVILEGES ON "+what+" FROM "+quote.Account(g.user, g.host)); err != nil && !noSuchGrant(err) {
			return fmt.Errorf("revoke the creator's grant on %s: %w", what, err)
		}
	}
	for _, g := range grants {
		var privs []string
		grantOption := false
		for _, p := range strings.Split(g.privs, ",") {
			switch p = strings.TrimSpace(p); strings.ToLower(p) {
			case "":
			case "grant":
				grantOption = true
			default:
				privs = append(privs, strings.ToUpper(p))
			}
		}
		if len(privs) == 0 {
			privs = []string{"USAGE"}
		}
		q := "GRANT " + strings.Join(privs, ", ") + " ON " + what + " TO " + quote.Account(g.user, g.host)
		if grantOption {
			q += " WITH GRANT OPTION"
		}
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("put back the grant on %s to %s@%s: %w", what, g.user, g.host, err)
		}
	}
	return nil
}

// routineGrants reads a routine's rows of mysql.procs_priv.
func routineGrants(ctx context.Context, c *sql.Conn, schema, name, typ string) ([]routineGrant, error) {
	rows, err := c.QueryContext(ctx, "SELECT User, Host, Proc_priv FROM mysql.procs_priv WHERE Db = ? AND Routine_name = ? AND Routine_type = ?", schema, name, typ)
	if err != nil {
		return nil, fmt.Errorf("read the grants of %s %s: %w", typ, quote.Qualified(schema, name), err)
	}
	defer rows.Close()
	var out []routineGrant
	for rows.Next() {
		var g routineGrant
		if err := rows.Scan(&g.user, &g.host, &g.privs); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// reownEventMySQL gives an event the owner as DEFINER with ALTER
// DEFINER=... EVENT, repeating its comment (ALTER EVENT needs a clause),
// in the event's sql_mode, time zone and character sets, which ALTER EVENT
// records again.
func reownEventMySQL(ctx context.Context, c *sql.Conn, o definedObject, owner string) error {
	var sqlMode, tz, comment, cs, coll string
	if err := c.QueryRowContext(ctx, `SELECT SQL_MODE, TIME_ZONE, EVENT_COMMENT, CHARACTER_SET_CLIENT, COLLATION_CONNECTION
		FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? AND EVENT_NAME = ?`, o.schema, o.name).Scan(&sqlMode, &tz, &comment, &cs, &coll); err != nil {
		return fmt.Errorf("read event: %w", err)
	}
	var oldTZ string
	if err := c.QueryRowContext(ctx, "SELECT @@session.time_zone").Scan(&oldTZ); err != nil {
		return err
	}
	for _, q := range []string{"SET SESSION sql_mode = " + quote.String(sqlMode), "SET SESSION time_zone = " + quote.String(tz)} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if err := useCharset(ctx, c, cs, coll, comment); err != nil {
		return err
	}
	_, err := c.ExecContext(ctx, "ALTER DEFINER="+owner+" EVENT "+quote.Qualified(o.schema, o.name)+" COMMENT "+quote.String(comment))
	for _, q := range []string{"SET NAMES utf8mb4", "SET SESSION sql_mode = ''", "SET SESSION time_zone = " + quote.String(oldTZ)} {
		if _, rerr := c.ExecContext(ctx, q); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// mysqlKey is a MySQL account or role: roles have hosts too.
type mysqlKey struct{ user, host string }

// reduceDefinersMySQL is reduceDefiners on MySQL: the DEFINERs of objs,
// every role they were granted (mysql.role_edges), transitively, and the
// roles of mandatory_roles, which every account has, lose their global
// privileges (static and dynamic) and their privileges on the mysql
// schema.
func reduceDefinersMySQL(ctx context.Context, c *sql.Conn, objs []definedObject) ([]string, error) {
	known := map[mysqlKey]bool{}
	rows, err := c.QueryContext(ctx, "SELECT User, Host FROM mysql.user")
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	for rows.Next() {
		var k mysqlKey
		if err := rows.Scan(&k.user, &k.host); err != nil {
			rows.Close()
			return nil, err
		}
		known[k] = true
	}
	rows.Close()
	granted := map[mysqlKey][]mysqlKey{}
	rows, err = c.QueryContext(ctx, "SELECT TO_USER, TO_HOST, FROM_USER, FROM_HOST FROM mysql.role_edges")
	if err != nil {
		return nil, fmt.Errorf("list role grants: %w", err)
	}
	for rows.Next() {
		var to, from mysqlKey
		if err := rows.Scan(&to.user, &to.host, &from.user, &from.host); err != nil {
			rows.Close()
			return nil, err
		}
		granted[to] = append(granted[to], from)
	}
	rows.Close()
	todo := map[mysqlKey]bool{} // -> mandatory
	var visit func(k mysqlKey, mandatory bool)
	visit = func(k mysqlKey, mandatory bool) {
		if !known[k] {
			return // a DEFINER that does not exist runs nothing
		}
		if m, seen := todo[k]; seen {
			todo[k] = m || mandatory
			return
		}
		todo[k] = mandatory
		for _, r := range granted[k] {
			visit(r, mandatory)
		}
	}
	for _, o := range objs {
		visit(mysqlKey{o.user, o.host}, false)
	}
	var mandatory string
	if err := c.QueryRowContext(ctx, "SELECT @@global.mandatory_roles").Scan(&mandatory); err != nil {
		return nil, fmt.Errorf("read mandatory_roles: %w", err)
	}
	for _, r := range parseRoleList(mandatory) {
		visit(r, true)
	}
	cols, err := privColumns(ctx, c, "user")
	if err != nil {
		return nil, err
	}
	dbCols, err := privColumns(ctx, c, "db")
	if err != nil {
		return nil, err
	}
	ks := make([]mysqlKey, 0, len(todo))
	for k := range todo {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].user+"@"+ks[i].host < ks[j].user+"@"+ks[j].host })
	var done []string
	for _, k := range ks {
		changed, err := reduceAccountMySQL(ctx, c, k, todo[k], cols, dbCols)
		if err != nil {
			return nil, fmt.Errorf("reduce %s: %w", quote.Account(k.user, k.host), err)
		}
		if changed {
			done = append(done, k.user+"@"+k.host)
		}
	}
	return done, nil
}

// parseRoleList reads mandatory_roles: `role`@`host` entries (quoted or
// not; no host is %) separated by commas.
func parseRoleList(s string) []mysqlKey {
	var out []mysqlKey
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		u, h := e, "%"
		if i := strings.LastIndex(e, "@"); i >= 0 {
			u, h = e[:i], e[i+1:]
		}
		out = append(out, mysqlKey{unquoteName(u), unquoteName(h)})
	}
	return out
}

func unquoteName(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '`' || s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		q := string(s[0])
		return strings.ReplaceAll(s[1:len(s)-1], q+q, q)
	}
	return s
}

// privColumns lists the *_priv columns of mysql.<table>.
func privColumns(ctx context.Context, c *sql.Conn, table string) (map[string]bool, error) {
	names, err := listStrings(ctx, c, `SELECT COLUMN_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = 'mysql' AND TABLE_NAME = ? AND COLUMN_NAME LIKE '%\_priv'`, table)
	if err != nil {
		return nil, fmt.Errorf("list the privilege columns of mysql.%s: %w", table, err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// reduceAccountMySQL is reduceAccount on MySQL: one account's or role's
// global privileges (the Y columns of mysql.user and its rows of
// mysql.global_grants) and privileges on the mysql schema are taken; the
// database-level ones among the global ones are granted on `%` and on each
// database it has its own entry for, unless the role is mandatory (every
// account's, as PUBLIC on MariaDB). cols and dbCols are the *_priv columns
// of mysql.user and mysql.db.
func reduceAccountMySQL(ctx context.Context, c *sql.Conn, k mysqlKey, mandatory bool, cols, dbCols map[string]bool) (bool, error) {
	names := make([]string, 0, len(cols))
	for col := range cols {
		names = append(names, col)
	}
	sort.Strings(names)
	vals := make([]string, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := c.QueryRowContext(ctx, "SELECT "+strings.Join(names, ", ")+" FROM mysql.user WHERE User = ? AND Host = ?", k.user, k.host).Scan(ptrs...); err != nil {
		return false, fmt.Errorf("read global privileges: %w", err)
	}
	dbLevel := map[string]string{}
	for _, p := range dbLevelPrivs {
		dbLevel[p.col] = p.priv
	}
	global := 0
	var privs []string
	for i, v := range vals {
		if v != "Y" {
			continue
		}
		global++
		if p, ok := dbLevel[names[i]]; ok {
			privs = append(privs, p)
		}
	}
	sort.Strings(privs)
	var dynamic int
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.global_grants WHERE USER = ? AND HOST = ?", k.user, k.host).Scan(&dynamic); err != nil {
		return false, fmt.Errorf("read dynamic privileges: %w", err)
	}
	global += dynamic
	var onMysql int
	if err := c.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM mysql.db WHERE User = ? AND Host = ? AND Db = 'mysql')
		+ (SELECT COUNT(*) FROM mysql.tables_priv WHERE User = ? AND Host = ? AND Db = 'mysql')
		+ (SELECT COUNT(*) FROM mysql.columns_priv WHERE User = ? AND Host = ? AND Db = 'mysql')
		+ (SELECT COUNT(*) FROM mysql.procs_priv WHERE User = ? AND Host = ? AND Db = 'mysql')`,
		k.user, k.host, k.user, k.host, k.user, k.host, k.user, k.host).Scan(&onMysql); err != nil {
		return false, fmt.Errorf("read privileges on mysql: %w", err)
	}
	// The shield: an exact entry on mysql with SHOW VIEW and nothing else.
	shield := []string{"Show_view_priv = 'Y'", "Grant_priv = 'N'"}
	for _, p := range dbLevelPrivs {
		if p.col != "Show_view_priv" && dbCols[p.col] {
			shield = append(shield, p.col+" = 'N'")
		}
	}
	var wild, shielded int
	if err := c.QueryRowContext(ctx, `SELECT COUNT(*), (SELECT COUNT(*) FROM mysql.db WHERE User = ? AND Host = ? AND Db = 'mysql' AND `+strings.Join(shield, " AND ")+`)
		FROM mysql.db WHERE User = ? AND Host = ? AND Db <> 'mysql' AND 'mysql' LIKE Db`, k.user, k.host, k.user, k.host).Scan(&wild, &shielded); err != nil {
		return false, fmt.Errorf("read database privileges: %w", err)
	}
	if global == 0 && (onMysql == 0 && wild == 0 || onMysql == 1 && shielded == 1) {
		return false, nil // nothing to take, or reduced already
	}
	g := quote.Account(k.user, k.host)
	var revokes []string
	if global != 0 {
		revokes = append(revokes, "ALL PRIVILEGES ON *.* FROM "+g, "GRANT OPTION ON *.* FROM "+g)
	}
	if onMysql != 0 {
		revokes = append(revokes, "ALL PRIVILEGES ON `mysql`.* FROM "+g, "GRANT OPTION ON `mysql`.* FROM "+g)
		tables, err := listStrings(ctx, c, "SELECT Table_name FROM mysql.tables_priv WHERE User = ? AND Host = ? AND Db = 'mysql'", k.user, k.host)
		if err != nil {
			return false, err
		}
		for _, t := range tables {
			revokes = append(revokes, "ALL PRIVILEGES ON "+quote.Qualified("mysql", t)+" FROM "+g, "GRANT OPTION ON "+quote.Qualified("mysql", t)+" FROM "+g)
		}
		routines, err := listStrings(ctx, c, "SELECT CONCAT(Routine_type, ' ', Routine_name) FROM mysql.procs_priv WHERE User = ? AND Host = ? AND Db = 'mysql'", k.user, k.host)
		if err != nil {
			return false, err
		}
		for _, r := range routines {
			typ, name, _ := strings.Cut(r, " ")
			revokes = append(revokes, "ALL PRIVILEGES ON "+typ+" "+quote.Qualified("mysql", name)+" FROM "+g)
		}
	}
	for _, r := range revokes {
		// A level the account holds no grant (or no GRANT OPTION) at is
		// no error.
		if _, err := c.ExecContext(ctx, "REVOKE "+r); err != nil && !noSuchGrant(err) {
			return false, fmt.Errorf("REVOKE %s: %w", r, err)
		}
	}
	var qs []string
	if len(privs) > 0 && !mandatory {
		dbs, err := listStrings(ctx, c, "SELECT Db FROM mysql.db WHERE User = ? AND Host = ? AND Db <> 'mysql'", k.user, k.host)
		if err != nil {
			return false, err
		}
		dbs = append(dbs, "%")
		for _, d := range dbs {
			qs = append(qs, "GRANT "+strings.Join(privs, ", ")+" ON "+quote.Ident(d)+".* TO "+g)
		}
	}
	// An exact entry on mysql wins over every wildcard entry (`%`, `m%`).
	qs = append(qs, "GRANT SHOW VIEW ON `mysql`.* TO "+g)
	for _, q := range qs {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return false, fmt.Errorf("%s: %w", q, err)
		}
	}
	return true, nil
}

// dropFormerDefinersMySQL is dropFormerDefiners on MySQL (no is_role: a
// role is an account, and anonymous roles do not exist).
func dropFormerDefinersMySQL(ctx context.Context, c *sql.Conn) error {
	objs, err := definedObjectsMySQL(ctx, c)
	if err != nil {
		return err
	}
	definers := map[string]bool{}
	for _, o := range objs {
		definers[o.user+"@"+o.host] = true
	}
	rows, err := c.QueryContext(ctx, "SELECT User, Host FROM mysql.user WHERE (User = 'root' AND Host <> 'localhost') OR User = '' OR (User = 'mysql' AND Host <> '')")
	if err != nil {
		return fmt.Errorf("list accounts: %w", err)
	}
	var drop []string
	for rows.Next() {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			rows.Close()
			return err
		}
		if !definers[u+"@"+h] {
			drop = append(drop, quote.Account(u, h))
		}
	}
	rows.Close()
	for _, a := range drop {
		if _, err := c.ExecContext(ctx, "DROP USER "+a); err != nil {
			return fmt.Errorf("drop %s: %w", a, err)
		}
	}
	return nil
}
