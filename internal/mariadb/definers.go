package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/quote"
)

// The owner account of a template: the DEFINER that views, triggers,
// routines and events of an administrative account (root, the build
// account, pristine's own) are given at build time (SecureDefiners). It has
// exactly a lease's database-level privileges (OwnerGrants), no global
// privilege, and is locked with a random password nobody keeps: nobody
// logs in as it, and a lease cannot name it as DEFINER (that needs SET
// USER, which leases lack). Each template has its own, made in its data
// directory.
const (
	OwnerUser = "pristine_owner"
	OwnerHost = "localhost"
)

// OwnerGrants are the owner account's privileges, as "PRIVS ON WHAT":
// with one database per slot, exactly a lease's (pool.LeaseGrants): every
// database-level privilege on every database but the system schemas,
// which exact SHOW VIEW entries keep out (and an exact SELECT entry
// keeps the performance schema's setup read-only). With several databases per slot
// (shared), a lease has its own database only and the owner gets no
// privilege on any lease's database: only on the other schemas that hold
// objects it owns (schemas), which no lease can change.
func OwnerGrants(schemas []string, leaseDBs []string, shared bool) []string {
	if !shared {
		return []string{"ALL PRIVILEGES ON `%`.*", "SHOW VIEW ON `mysql`.*", "SHOW VIEW ON `sys`.*", "SELECT ON `performance_schema`.*"}
	}
	skip := map[string]bool{"mysql": true, "sys": true, "performance_schema": true, "information_schema": true}
	for _, d := range leaseDBs {
		skip[d] = true
	}
	var out []string
	for _, s := range schemas {
		if !skip[s] {
			out = append(out, "ALL PRIVILEGES ON "+quote.Ident(s)+".*")
			skip[s] = true
		}
	}
	return out
}

// AdminDefiner reports whether user@host is an administrative account as a
// DEFINER: root at any host, pristine's build account, owner and lease
// accounts, the Debian mysql account, anonymous accounts, and the
// server's own system accounts (mariadb.sys; mysql.sys, mysql.session and
// mysql.infoschema on MySQL). Objects of these are re-owned by the owner
// account. schema is the object's schema: mariadb.sys's own objects in
// the system schemas (the mysql.user view, sys's triggers; MySQL's sys
// views and routines of mysql.sys) stay its own.
func AdminDefiner(user, host, schema string) bool {
	switch {
	case user == "root", user == "pristine", user == OwnerUser, user == "mysql", user == "",
		strings.HasPrefix(user, "lease_"), user == "mysql.session", user == "mysql.infoschema":
		return true
	case user == "mariadb.sys", user == "mysql.sys":
		return schema != "mysql" && schema != "sys"
	}
	return false
}

// DefinerReport says what SecureDefiners changed.
type DefinerReport struct {
	// Reowned lists the objects given to the owner account, as
	// "kind `schema`.`name` (was user@host)".
	Reowned []string
	// Reduced lists the accounts and roles (definers, and the roles they
	// can set) whose global privileges and privileges on the mysql schema
	// were taken away.
	Reduced []string
	// Dropped lists views that named an administrative DEFINER but could not
	// be re-created (they reference objects that do not exist), so they were
	// dropped: a lease could otherwise make the missing table its own view.
	Dropped []string
}

// definedObject is a view, trigger, routine or event with its DEFINER.
type definedObject struct {
	kind, schema, name string
	user, host         string
	table              string // a trigger's table
}

func (o definedObject) String() string {
	return fmt.Sprintf("%s %s (was %s@%s)", o.kind, quote.Qualified(o.schema, o.name), o.user, o.host)
}

// SecureDefiners makes sure no object of the data directory runs with more
// privileges than a lease has (docs/security.md, "No definer gadget"):
//
//  1. the owner account (OwnerUser) is made, locked, with OwnerGrants;
//  2. every view, trigger, routine and event whose DEFINER is
//     administrative (AdminDefiner) gets the owner as DEFINER, keeping its
//     SQL SECURITY, body, sql_mode, character sets and (for triggers) its
//     order;
//  3. every other DEFINER that exists (an account the template's SQL made,
//     or a captured one), and every role it can set, transitively, loses
//     its global privileges and its privileges on the mysql schema: the
//     database-level ones among its global privileges are granted on `%`
//     (and on each database it has its own entry for) instead, and an
//     exact SHOW VIEW entry on mysql keeps any wildcard entry (its own
//     `%` or `m%` too) from matching the system schema;
//     PUBLIC, whose privileges every account has, loses the same without
//     any grant on `%` in their place;
//  4. root at hosts other than localhost, mysql@ and anonymous accounts,
//     which SecureAccounts keeps (locked) only while they are DEFINERs, are
//     dropped once they are not.
//
// Routines and events are re-owned in mysql.proc and mysql.event: the
// server reads them from there at its next start, so c's server must be
// stopped (cleanly) after this and before anyone else uses it; the
// build's and import's private servers are. c must be root's. leaseDBs are
// the databases leases get; shared says several share a slot
// (--dbs-per-slot).
//
// MySQL 8/9 has no mysql.proc or mysql.event (the data dictionary holds
// them), no mysql.global_priv and no PUBLIC: its flavour
// (definers_mysql.go) re-creates routines from SHOW CREATE with their
// grants, re-owns events by ALTER DEFINER=... EVENT, views from SHOW
// CREATE VIEW, and reads privileges from mysql.user, mysql.global_grants
// and mysql.role_edges; the roles of mandatory_roles stand in for PUBLIC.
// The server's flavour is asked of c.
func SecureDefiners(ctx context.Context, c *sql.Conn, leaseDBs []string, shared bool) (*DefinerReport, error) {
	rep := &DefinerReport{}
	for _, q := range []string{"SET NAMES utf8mb4", "SET SESSION sql_mode=''", "SET SESSION sql_quote_show_create=1"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("secure definers: %w", err)
		}
	}
	f, err := Probe(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("secure definers: %w", err)
	}
	d := f.definers()
	objs, err := d.list(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("secure definers: %w", err)
	}
	var admin, other []definedObject
	ownerSchemas := map[string]bool{}
	for _, o := range objs {
		if o.user == OwnerUser && o.host == OwnerHost {
			ownerSchemas[o.schema] = true // re-owned already (a copy of a template)
			continue
		}
		if AdminDefiner(o.user, o.host, o.schema) {
			admin = append(admin, o)
			ownerSchemas[o.schema] = true
		} else if o.user != "mariadb.sys" && o.user != "mysql.sys" {
			other = append(other, o)
		}
	}
	if err := makeOwner(ctx, c, sortedKeys(ownerSchemas), leaseDBs, shared); err != nil {
		return nil, err
	}
	owner := quote.Account(OwnerUser, OwnerHost)
	triggerTables := map[[2]string]bool{}
	for _, o := range admin {
		switch o.kind {
		case "view":
			ok, err := d.reownView(ctx, c, o, owner)
			if err != nil {
				return nil, err
			}
			if !ok {
				rep.Dropped = append(rep.Dropped, o.String())
				continue
			}
		case "trigger":
			triggerTables[[2]string{o.schema, o.table}] = true
		case "procedure", "function", "package", "package body":
			if err := d.reownRoutine(ctx, c, o, owner); err != nil {
				return nil, fmt.Errorf("secure definers: re-own %s: %w", o, err)
			}
		case "event":
			if err := d.reownEvent(ctx, c, o, owner); err != nil {
				return nil, fmt.Errorf("secure definers: re-own %s: %w", o, err)
			}
		}
		rep.Reowned = append(rep.Reowned, o.String())
	}
	for _, t := range sortedPairs(triggerTables) {
		if err := recreateTriggers(ctx, c, t[0], t[1], owner); err != nil {
			return nil, fmt.Errorf("secure definers: re-own the triggers of %s: %w", quote.Qualified(t[0], t[1]), err)
		}
	}
	reduced, err := d.reduce(ctx, c, other)
	if err != nil {
		return nil, fmt.Errorf("secure definers: %w", err)
	}
	rep.Reduced = reduced
	if err := d.dropFormer(ctx, c); err != nil {
		return nil, fmt.Errorf("secure definers: %w", err)
	}
	return rep, nil
}

// definerSteps are the steps of SecureDefiners that differ between the
// server families: how the defined objects are listed, how a view, a
// routine and an event are given the owner, how the other definers'
// privileges are reduced and the former definers dropped. The flow that
// calls them is one (SecureDefiners); triggers are re-created the same
// way on both.
type definerSteps struct {
	list         func(ctx context.Context, c *sql.Conn) ([]definedObject, error)
	reownView    func(ctx context.Context, c *sql.Conn, o definedObject, owner string) (bool, error)
	reownRoutine func(ctx context.Context, c *sql.Conn, o definedObject, owner string) error
	reownEvent   func(ctx context.Context, c *sql.Conn, o definedObject, owner string) error
	reduce       func(ctx context.Context, c *sql.Conn, objs []definedObject) ([]string, error)
	dropFormer   func(ctx context.Context, c *sql.Conn) error
}

// definers are the flavour's definer steps: MariaDB's in its tables
// (mysql.proc, mysql.event, mysql.global_priv), MySQL's through its data
// dictionary (definers_mysql.go).
func (f Flavor) definers() definerSteps {
	if f == MySQL {
		return definerSteps{definedObjectsMySQL, reownViewMySQL, reownRoutineMySQL, reownEventMySQL, reduceDefinersMySQL, dropFormerDefinersMySQL}
	}
	return definerSteps{definedObjects, reownView, reownRoutine, reownEvent, reduceDefiners, dropFormerDefiners}
}

// reownRoutine gives a routine the owner in mysql.proc, which the server
// reads at its next start.
func reownRoutine(ctx context.Context, c *sql.Conn, o definedObject, _ string) error {
	_, err := c.ExecContext(ctx, "UPDATE mysql.proc SET definer = ? WHERE db = ? AND name = ? AND type = ?",
		OwnerUser+"@"+OwnerHost, o.schema, o.name, strings.ToUpper(o.kind))
	return err
}

// reownEvent gives an event the owner in mysql.event, which the server
// reads at its next start.
func reownEvent(ctx context.Context, c *sql.Conn, o definedObject, _ string) error {
	_, err := c.ExecContext(ctx, "UPDATE mysql.event SET definer = ? WHERE db = ? AND name = ?",
		OwnerUser+"@"+OwnerHost, o.schema, o.name)
	return err
}

// definedObjects lists every view, trigger, routine and event with its
// DEFINER, from information_schema (mysql.event when the event scheduler
// is disabled, as under --skip-grant-tables).
func definedObjects(ctx context.Context, c *sql.Conn) ([]definedObject, error) {
	var out []definedObject
	read := func(kind, q string) error {
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var o definedObject
			var definer string
			if err := rows.Scan(&o.kind, &o.schema, &o.name, &definer, &o.table); err != nil {
				return err
			}
			if kind != "" {
				o.kind = kind
			}
			o.kind = strings.ToLower(o.kind)
			o.user, o.host = SplitDefiner(definer)
			out = append(out, o)
		}
		return rows.Err()
	}
	if err := read("view", "SELECT '', TABLE_SCHEMA, TABLE_NAME, DEFINER, '' FROM information_schema.VIEWS"); err != nil {
		return nil, fmt.Errorf("list views: %w", err)
	}
	if err := read("trigger", "SELECT '', TRIGGER_SCHEMA, TRIGGER_NAME, DEFINER, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS"); err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	if err := read("", "SELECT CONVERT(type USING utf8mb4), CONVERT(db USING utf8mb4), CONVERT(name USING utf8mb4), CONVERT(definer USING utf8mb4), '' FROM mysql.proc"); err != nil {
		return nil, fmt.Errorf("list routines: %w", err)
	}
	if err := read("event", "SELECT '', CONVERT(db USING utf8mb4), CONVERT(name USING utf8mb4), CONVERT(definer USING utf8mb4), '' FROM mysql.event"); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// SplitDefiner splits a DEFINER as information_schema prints it
// (user@host; a role has no host) at its last @.
func SplitDefiner(d string) (user, host string) {
	if i := strings.LastIndex(d, "@"); i >= 0 {
		return d[:i], d[i+1:]
	}
	return d, ""
}

// makeOwner creates the owner account (or resets one a copied data
// directory holds), locked with a random password, with OwnerGrants.
func makeOwner(ctx context.Context, c *sql.Conn, schemas, leaseDBs []string, shared bool) error {
	owner := quote.Account(OwnerUser, OwnerHost)
	qs := []string{
		"CREATE USER IF NOT EXISTS " + owner,
		"ALTER USER " + owner + " IDENTIFIED BY " + quote.String(RandomSecret()) + " ACCOUNT LOCK",
		"REVOKE ALL PRIVILEGES, GRANT OPTION FROM " + owner,
	}
	for _, g := range OwnerGrants(schemas, leaseDBs, shared) {
		qs = append(qs, "GRANT "+g+" TO "+owner)
	}
	for _, q := range qs {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("secure definers: make the owner account: %s: %w", strings.Join(strings.Fields(q)[:2], " "), err)
		}
	}
	return nil
}

// useCharset sets the session's client character set and collation to an
// object's, so it is re-created with them. The text was read as utf8mb4:
// it is sent in the object's character set only when that reads it the
// same (a utf8 set, or the text is ASCII); otherwise utf8mb4 is kept.
func useCharset(ctx context.Context, c *sql.Conn, cs, coll, text string) error {
	ascii := true
	for i := 0; i < len(text); i++ {
		if text[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if !ascii && !strings.HasPrefix(cs, "utf8") {
		cs, coll = "utf8mb4", "utf8mb4_general_ci"
	}
	if _, err := c.ExecContext(ctx, "SET character_set_client = "+quote.String(cs)); err != nil {
		return err
	}
	_, err := c.ExecContext(ctx, "SET collation_connection = "+quote.String(coll))
	return err
}

// resetCharset goes back to utf8mb4 for reading.
func resetCharset(ctx context.Context, c *sql.Conn) error {
	_, err := c.ExecContext(ctx, "SET NAMES utf8mb4")
	return err
}

// reownView gives a view the owner as DEFINER with ALTER VIEW, keeping its
// algorithm, SQL SECURITY, query, check option and character sets. A view
// the server cannot re-create (it names a table that does not exist) is
// dropped, and ok is false.
func reownView(ctx context.Context, c *sql.Conn, o definedObject, owner string) (ok bool, err error) {
	var def, check, security, alg, cs, coll string
	if err := c.QueryRowContext(ctx, `SELECT VIEW_DEFINITION, CHECK_OPTION, SECURITY_TYPE, ALGORITHM, CHARACTER_SET_CLIENT, COLLATION_CONNECTION
		FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, o.schema, o.name).Scan(&def, &check, &security, &alg, &cs, &coll); err != nil {
		return false, fmt.Errorf("secure definers: read %s: %w", o, err)
	}
	q := "ALTER ALGORITHM=" + alg + " DEFINER=" + owner + " SQL SECURITY " + security + " VIEW " + quote.Qualified(o.schema, o.name) + " AS " + def
	if check != "NONE" {
		q += " WITH " + check + " CHECK OPTION"
	}
	// The definition names a routine of the view's own schema without
	// it (`f`()): resolved in that schema, as MySQL's flavour does.
	if _, err := c.ExecContext(ctx, "USE "+quote.Ident(o.schema)); err != nil {
		return false, fmt.Errorf("secure definers: %w", err)
	}
	if err := useCharset(ctx, c, cs, coll, def); err != nil {
		return false, fmt.Errorf("secure definers: %w", err)
	}
	_, err = c.ExecContext(ctx, q)
	if rerr := resetCharset(ctx, c); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		// A view whose tables or functions are gone cannot be altered;
		// left with its administrative DEFINER it would run, as that
		// account, whatever a lease puts in their place.
		if _, derr := c.ExecContext(ctx, "DROP VIEW "+quote.Qualified(o.schema, o.name)); derr != nil {
			return false, fmt.Errorf("secure definers: re-own %s: %v; and it cannot be dropped: %w", o, err, derr)
		}
		return false, nil
	}
	return true, nil
}

// trigger is one trigger as SHOW CREATE TRIGGER prints it.
type trigger struct {
	name, sqlMode, stmt, cs, coll, definer string
}

// recreateTriggers re-creates every trigger of a table in its order (one
// re-created alone would go last among its table's), with the owner as
// DEFINER for those of an administrative account, each with its sql_mode
// and character sets.
func recreateTriggers(ctx context.Context, c *sql.Conn, schema, table, owner string) error {
	rows, err := c.QueryContext(ctx, `SELECT TRIGGER_NAME, DEFINER FROM information_schema.TRIGGERS
		WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? ORDER BY EVENT_MANIPULATION, ACTION_TIMING, ACTION_ORDER`, schema, table)
	if err != nil {
		return err
	}
	var trgs []trigger
	for rows.Next() {
		var t trigger
		if err := rows.Scan(&t.name, &t.definer); err != nil {
			rows.Close()
			return err
		}
		trgs = append(trgs, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range trgs {
		t := &trgs[i]
		var name, created, dbColl sql.NullString
		if err := c.QueryRowContext(ctx, "SHOW CREATE TRIGGER "+quote.Qualified(schema, t.name)).Scan(&name, &t.sqlMode, &t.stmt, &t.cs, &t.coll, &dbColl, &created); err != nil {
			return fmt.Errorf("show trigger %s: %w", t.name, err)
		}
		u, h := SplitDefiner(t.definer)
		if AdminDefiner(u, h, schema) {
			rest, err := cutDefiner(t.stmt)
			if err != nil {
				return fmt.Errorf("trigger %s: %w", t.name, err)
			}
			t.stmt = "CREATE DEFINER=" + owner + " " + rest
		}
	}
	if _, err := c.ExecContext(ctx, "USE "+quote.Ident(schema)); err != nil {
		return err
	}
	for _, t := range trgs {
		if _, err := c.ExecContext(ctx, "DROP TRIGGER "+quote.Qualified(schema, t.name)); err != nil {
			return err
		}
	}
	for _, t := range trgs {
		if _, err := c.ExecContext(ctx, "SET SESSION sql_mode = "+quote.String(t.sqlMode)); err != nil {
			return err
		}
		if err := useCharset(ctx, c, t.cs, t.coll, t.stmt); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, t.stmt); err != nil {
			return fmt.Errorf("re-create trigger %s: %w", t.name, err)
		}
	}
	if err := resetCharset(ctx, c); err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, "SET SESSION sql_mode = ''")
	return err
}

// cutDefiner returns stmt ("CREATE DEFINER=`u`@`h` TRIGGER ...") after its
// DEFINER clause: "TRIGGER ...".
func cutDefiner(stmt string) (string, error) {
	s := strings.TrimLeft(stmt, " \t\r\n")
	const create = "CREATE"
	if len(s) < len(create) || !strings.EqualFold(s[:len(create)], create) {
		return "", fmt.Errorf("statement does not start with CREATE: %.60q", stmt)
	}
	s = strings.TrimLeft(s[len(create):], " \t\r\n")
	const definer = "DEFINER"
	if len(s) < len(definer) || !strings.EqualFold(s[:len(definer)], definer) {
		return s, nil // no DEFINER clause
	}
	s = strings.TrimLeft(s[len(definer):], " \t\r\n")
	if !strings.HasPrefix(s, "=") {
		return "", fmt.Errorf("no = after DEFINER: %.60q", stmt)
	}
	s = strings.TrimLeft(s[1:], " \t\r\n")
	if strings.HasPrefix(strings.ToUpper(s), "CURRENT_USER") {
		s = strings.TrimPrefix(s[len("CURRENT_USER"):], "()")
		return strings.TrimLeft(s, " \t\r\n"), nil
	}
	rest, err := skipName(s)
	if err != nil {
		return "", fmt.Errorf("DEFINER of %.60q: %w", stmt, err)
	}
	if strings.HasPrefix(rest, "@") {
		if rest, err = skipName(rest[1:]); err != nil {
			return "", fmt.Errorf("DEFINER of %.60q: %w", stmt, err)
		}
	}
	return strings.TrimLeft(rest, " \t\r\n"), nil
}

// skipName skips a user or host name: quoted with `, " or ' (a doubled
// quote inside), or bare up to @ or a space.
func skipName(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty name")
	}
	q := s[0]
	if q == '`' || q == '"' || q == '\'' {
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' && q != '`' {
				i++
				continue
			}
			if s[i] == q {
				if i+1 < len(s) && s[i+1] == q {
					i++
					continue
				}
				return s[i+1:], nil
			}
		}
		return "", errors.New("unterminated name")
	}
	i := strings.IndexAny(s, "@ \t\r\n")
	if i < 0 {
		return "", errors.New("nothing after the name")
	}
	return s[i:], nil
}

// dbLevelPrivs maps the columns of mysql.user (a view in MariaDB) for the
// global privileges that exist at the database level to their names.
var dbLevelPrivs = []struct{ col, priv string }{
	{"Select_priv", "SELECT"}, {"Insert_priv", "INSERT"}, {"Update_priv", "UPDATE"}, {"Delete_priv", "DELETE"},
	{"Create_priv", "CREATE"}, {"Drop_priv", "DROP"}, {"References_priv", "REFERENCES"}, {"Index_priv", "INDEX"},
	{"Alter_priv", "ALTER"}, {"Create_tmp_table_priv", "CREATE TEMPORARY TABLES"}, {"Lock_tables_priv", "LOCK TABLES"},
	{"Execute_priv", "EXECUTE"}, {"Create_view_priv", "CREATE VIEW"}, {"Show_view_priv", "SHOW VIEW"},
	{"Create_routine_priv", "CREATE ROUTINE"}, {"Alter_routine_priv", "ALTER ROUTINE"}, {"Event_priv", "EVENT"},
	{"Trigger_priv", "TRIGGER"}, {"Delete_history_priv", "DELETE HISTORY"},
}

// account is a user (host set) or a role (no host).
type account struct {
	user, host string
	role       bool
}

// public reports whether a is PUBLIC, the role every account has: its
// global privileges are every lease's, so they are taken, and never
// turned into grants on `%`.
func (a account) public() bool { return a.role && a.user == "PUBLIC" }

func (a account) grantee() string {
	if a.role {
		return quote.String(a.user)
	}
	return quote.Account(a.user, a.host)
}

// reduceDefiners takes global privileges and privileges on the mysql
// schema from the DEFINERs of objs and the roles they can set (see
// SecureDefiners), and returns them as user@host (a role as its name).
func reduceDefiners(ctx context.Context, c *sql.Conn, objs []definedObject) ([]string, error) {
	type key struct{ user, host string }
	known := map[key]bool{} // exists -> is a role
	rows, err := c.QueryContext(ctx, "SELECT User, Host, is_role FROM mysql.user")
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	for rows.Next() {
		var u, h, r string
		if err := rows.Scan(&u, &h, &r); err != nil {
			rows.Close()
			return nil, err
		}
		known[key{u, h}] = r == "Y"
	}
	rows.Close()
	grantedRoles := map[key][]string{}
	rows, err = c.QueryContext(ctx, "SELECT User, Host, Role FROM mysql.roles_mapping")
	if err != nil {
		return nil, fmt.Errorf("list role grants: %w", err)
	}
	for rows.Next() {
		var u, h, r string
		if err := rows.Scan(&u, &h, &r); err != nil {
			rows.Close()
			return nil, err
		}
		grantedRoles[key{u, h}] = append(grantedRoles[key{u, h}], r)
	}
	rows.Close()
	todo := map[key]account{}
	var visit func(k key)
	visit = func(k key) {
		role, ok := known[k]
		if !ok {
			return // a DEFINER that does not exist runs nothing
		}
		if _, seen := todo[k]; seen {
			return
		}
		todo[k] = account{user: k.user, host: k.host, role: role}
		for _, r := range grantedRoles[k] {
			visit(key{r, ""})
		}
	}
	for _, o := range objs {
		visit(key{o.user, o.host})
		if o.host == "" || o.host == "%" {
			visit(key{o.user, ""}) // a role DEFINER
		}
	}
	// Every account, a lease and every DEFINER too, has PUBLIC's
	// privileges (MariaDB 10.11).
	visit(key{"PUBLIC", ""})
	var done []string
	ks := make([]key, 0, len(todo))
	for k := range todo {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].user+"@"+ks[i].host < ks[j].user+"@"+ks[j].host })
	for _, k := range ks {
		a := todo[k]
		changed, err := reduceAccount(ctx, c, a)
		if err != nil {
			return nil, fmt.Errorf("reduce %s: %w", a.grantee(), err)
		}
		if changed {
			name := a.user
			if !a.role {
				name += "@" + a.host
			}
			done = append(done, name)
		}
	}
	return done, nil
}

// reduceAccount takes one account's global privileges and its privileges
// on the mysql schema; the database-level privileges among the global ones
// are granted on `%` and on each database the account has its own entry
// for. It reports whether anything changed.
func reduceAccount(ctx context.Context, c *sql.Conn, a account) (bool, error) {
	cols := make([]string, len(dbLevelPrivs))
	for i, p := range dbLevelPrivs {
		cols[i] = p.col
	}
	host := a.host
	var access sql.NullInt64
	if err := c.QueryRowContext(ctx, "SELECT JSON_VALUE(Priv, '$.access') FROM mysql.global_priv WHERE User = ? AND Host = ?", a.user, host).Scan(&access); err != nil {
		return false, fmt.Errorf("read global privileges: %w", err)
	}
	global := access.Int64
	vals := make([]string, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := c.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM mysql.user WHERE User = ? AND Host = ?", a.user, host).Scan(ptrs...); err != nil {
		return false, fmt.Errorf("read global privileges: %w", err)
	}
	var privs []string
	for i, v := range vals {
		if v == "Y" {
			privs = append(privs, dbLevelPrivs[i].priv)
		}
	}
	var onMysql int
	if err := c.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM mysql.db WHERE User = ? AND Host = ? AND Db = 'mysql')
		+ (SELECT COUNT(*) FROM mysql.tables_priv WHERE User = ? AND Host = ? AND Db = 'mysql')
		+ (SELECT COUNT(*) FROM mysql.columns_priv WHERE User = ? AND Host = ? AND Db = 'mysql')
		+ (SELECT COUNT(*) FROM mysql.procs_priv WHERE User = ? AND Host = ? AND Db = 'mysql')`,
		a.user, host, a.user, host, a.user, host, a.user, host).Scan(&onMysql); err != nil {
		return false, fmt.Errorf("read privileges on mysql: %w", err)
	}
	// A wildcard entry (`%`, `m%`, `my_ql`) matches mysql unless an exact
	// entry is there to win.
	// The shield: an entry on mysql with SHOW VIEW and nothing else.
	shield := []string{"Show_view_priv = 'Y'", "Grant_priv = 'N'"}
	for _, p := range dbLevelPrivs {
		if p.col != "Show_view_priv" {
			shield = append(shield, p.col+" = 'N'")
		}
	}
	var wild, shielded int
	if err := c.QueryRowContext(ctx, `SELECT COUNT(*), (SELECT COUNT(*) FROM mysql.db WHERE User = ? AND Host = ? AND Db = 'mysql' AND `+strings.Join(shield, " AND ")+`)
		FROM mysql.db WHERE User = ? AND Host = ? AND Db <> 'mysql' AND 'mysql' LIKE Db`, a.user, host, a.user, host).Scan(&wild, &shielded); err != nil {
		return false, fmt.Errorf("read database privileges: %w", err)
	}
	if global == 0 && (onMysql == 0 && wild == 0 || onMysql == 1 && shielded == 1) {
		return false, nil // nothing to take, or reduced already
	}
	var qs, revokes []string
	g := a.grantee()
	if global != 0 {
		revokes = append(revokes, "ON *.* FROM "+g)
	}
	if onMysql != 0 {
		revokes = append(revokes, "ON `mysql`.* FROM "+g)
		tables, err := listStrings(ctx, c, "SELECT Table_name FROM mysql.tables_priv WHERE User = ? AND Host = ? AND Db = 'mysql'", a.user, host)
		if err != nil {
			return false, err
		}
		for _, t := range tables {
			revokes = append(revokes, "ON "+quote.Qualified("mysql", t)+" FROM "+g)
		}
		routines, err := listStrings(ctx, c, "SELECT CONCAT(Routine_type, ' ', Routine_name) FROM mysql.procs_priv WHERE User = ? AND Host = ? AND Db = 'mysql'", a.user, host)
		if err != nil {
			return false, err
		}
		for _, r := range routines {
			typ, name, _ := strings.Cut(r, " ")
			revokes = append(revokes, "ON "+typ+" "+quote.Qualified("mysql", name)+" FROM "+g)
		}
	}
	if len(privs) > 0 && !a.public() {
		dbs, err := listStrings(ctx, c, "SELECT Db FROM mysql.db WHERE User = ? AND Host = ? AND Db <> 'mysql'", a.user, host)
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
	for _, r := range revokes {
		for _, what := range []string{"ALL PRIVILEGES ", "GRANT OPTION "} {
			// A level the account holds no grant (or no GRANT OPTION) at
			// is no error.
			if _, err := c.ExecContext(ctx, "REVOKE "+what+r); err != nil && !noSuchGrant(err) {
				return false, fmt.Errorf("REVOKE %s%s: %w", what, r, err)
			}
		}
	}
	for _, q := range qs {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return false, fmt.Errorf("%s: %w", q, err)
		}
	}
	return true, nil
}

// noSuchGrant reports whether err is the server saying there is no such
// grant to revoke (1141, 1147, 1403).
func noSuchGrant(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	return me.Number == 1141 || me.Number == 1147 || me.Number == 1403
}

func listStrings(ctx context.Context, c *sql.Conn, q string, args ...any) ([]string, error) {
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// dropFormerDefiners drops the administrative accounts SecureAccounts kept
// locked only because they were DEFINERs (root at other hosts, mysql@,
// anonymous accounts), once they are not.
func dropFormerDefiners(ctx context.Context, c *sql.Conn) error {
	// The accounts first: most data directories have none of them left,
	// and then the objects (a walk over every table) need not be read.
	rows, err := c.QueryContext(ctx, "SELECT User, Host FROM mysql.user WHERE (User = 'root' AND Host <> 'localhost') OR (User = '' AND is_role = 'N') OR (User = 'mysql' AND Host <> '')")
	if err != nil {
		return fmt.Errorf("list accounts: %w", err)
	}
	var kept [][2]string
	for rows.Next() {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			rows.Close()
			return err
		}
		kept = append(kept, [2]string{u, h})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list accounts: %w", err)
	}
	if len(kept) == 0 {
		return nil
	}
	objs, err := definedObjects(ctx, c)
	if err != nil {
		return err
	}
	definers := map[string]bool{}
	for _, o := range objs {
		definers[o.user+"@"+o.host] = true
	}
	for _, a := range kept {
		if definers[a[0]+"@"+a[1]] {
			continue
		}
		if _, err := c.ExecContext(ctx, "DROP USER "+quote.Account(a[0], a[1])); err != nil {
			return fmt.Errorf("drop %s: %w", quote.Account(a[0], a[1]), err)
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedPairs(m map[[2]string]bool) [][2]string {
	out := make([][2]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out
}
