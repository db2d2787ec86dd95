package capture

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
)

// account is a user that holds privileges on a captured database, with
// the statements that recreate it.
type account struct {
	grantee string // 'user'@'host'
	create  string // SHOW CREATE USER
	grants  []string
}

// readAccounts finds the accounts with privileges on the databases (at the
// schema, table, column or routine level) and reads SHOW CREATE USER and
// SHOW GRANTS for each, keeping the grants on *.* and on those databases.
// Reading another account's grants needs SELECT on the mysql schema; without
// it only the capturing user's own grants are visible, and skipped says so.
func readAccounts(ctx context.Context, db *sql.DB, dbs []string) (accts []account, skipped string, err error) {
	in := make([]string, len(dbs))
	for i, d := range dbs {
		in[i] = quoteString(d)
	}
	list := strings.Join(in, ",")
	q := `SELECT DISTINCT GRANTEE FROM (
	 SELECT GRANTEE FROM information_schema.SCHEMA_PRIVILEGES WHERE TABLE_SCHEMA IN (` + list + `)
	 UNION SELECT GRANTEE FROM information_schema.TABLE_PRIVILEGES WHERE TABLE_SCHEMA IN (` + list + `)
	 UNION SELECT GRANTEE FROM information_schema.COLUMN_PRIVILEGES WHERE TABLE_SCHEMA IN (` + list + `)) g ORDER BY GRANTEE`
	grantees, err := queryStrings(ctx, db, q)
	if err != nil {
		return nil, "", fmt.Errorf("list accounts: %w", err)
	}
	routineGrantees, err := queryStrings(ctx, db, "SELECT DISTINCT CONCAT(QUOTE(User), '@', QUOTE(Host)) FROM mysql.procs_priv WHERE Db IN ("+list+")")
	if err == nil {
		grantees = append(grantees, routineGrantees...)
	}
	// The DEFINERs of views, routines, triggers and events must exist for
	// those objects to run as they do on the source.
	definers, err := queryStrings(ctx, db, `SELECT DISTINCT DEFINER FROM (
	 SELECT DEFINER FROM information_schema.VIEWS WHERE TABLE_SCHEMA IN (`+list+`)
	 UNION SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA IN (`+list+`)
	 UNION SELECT DEFINER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA IN (`+list+`)
	 UNION SELECT DEFINER FROM information_schema.EVENTS WHERE EVENT_SCHEMA IN (`+list+`)) d`)
	if err == nil {
		for _, d := range definers {
			if i := strings.LastIndex(d, "@"); i > 0 {
				user, host := d[:i], d[i+1:]
				if isRole(ctx, db, user) && host == "" {
					continue
				}
				grantees = append(grantees, quoteString(user)+"@"+quoteString(host))
			}
		}
	}
	seen := map[string]bool{}
	roles := map[string]bool{}
	for _, g := range grantees {
		if user, host := splitGrantee(g); host == "" && isRole(ctx, db, user) {
			roles[user] = true
		}
	}
	for _, g := range grantees {
		if seen[g] || strings.HasPrefix(g, "'pristine'@") {
			continue
		}
		seen[g] = true
		var create string
		if user, host := splitGrantee(g); host == "" && roles[user] {
			// A role: SHOW CREATE USER does not know it, and its grants
			// are read by its bare name.
			g = quoteIdent(user)
			create = "CREATE ROLE " + g
		} else if err := db.QueryRowContext(ctx, "SHOW CREATE USER "+g).Scan(&create); err != nil {
			if isAccessDenied(err) {
				skipped = "accounts other than the capturing user are not copied: grant SELECT ON mysql.* to copy them"
				continue
			}
			return nil, "", fmt.Errorf("show create user %s: %w", g, err)
		}
		lines, err := queryStrings(ctx, db, "SHOW GRANTS FOR "+g)
		if err != nil {
			return nil, "", fmt.Errorf("show grants for %s: %w", g, err)
		}
		a := account{grantee: g, create: create}
		for _, l := range lines {
			if keepGrant(l, dbs) || grantsRole(l, roles) || setsRole(l, roles) {
				a.grants = append(a.grants, l)
			}
		}
		accts = append(accts, a)
	}
	return accts, skipped, nil
}

var grantOnRe = regexp.MustCompile("(?is)^GRANT\\s+.+?\\s+ON\\s+(?:(?:PROCEDURE|FUNCTION|PACKAGE(?:\\s+BODY)?)\\s+)?(\\*|`(?:[^`]|``)*`)\\.")

// isRole reports whether name is a role rather than a user.
func isRole(ctx context.Context, db *sql.DB, name string) bool {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE User = ? AND Host = '' AND is_role = 'Y'", name).Scan(&n)
	return err == nil && n > 0
}

var grantRoleRe = regexp.MustCompile("(?is)^GRANT\\s+(`(?:[^`]|``)*`|'(?:[^']|'')*'|\\w+)\\s+TO\\s+")

// grantsRole keeps a line that grants one of the copied roles.
func grantsRole(line string, roles map[string]bool) bool {
	m := grantRoleRe.FindStringSubmatch(line)
	return m != nil && roles[unquote(m[1])]
}

var defaultRoleRe = regexp.MustCompile("(?is)^SET\\s+DEFAULT\\s+ROLE\\s+(`(?:[^`]|``)*`|'(?:[^']|'')*'|\\w+)\\s+FOR\\s+")

// setsRole keeps SET DEFAULT ROLE lines that name a copied role.
func setsRole(line string, roles map[string]bool) bool {
	m := defaultRoleRe.FindStringSubmatch(line)
	return m != nil && roles[unquote(m[1])]
}

// keepGrant keeps GRANT lines on *.* and on the captured databases.
func keepGrant(line string, dbs []string) bool {
	m := grantOnRe.FindStringSubmatch(line)
	if m == nil {
		return false // role grants and PROXY need accounts that are not copied
	}
	d := unquote(m[1])
	if d == "*" {
		return true
	}
	for _, x := range dbs {
		if x == d {
			return true
		}
	}
	return false
}

// createAccounts creates the accounts missing on the target (one that
// exists there, such as root@localhost, is left as it is).
func createAccounts(ctx context.Context, dst *sql.Conn, accts []account) ([]account, error) {
	var made []account
	for _, a := range accts {
		var n int
		user, host := splitGrantee(a.grantee)
		if err := dst.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE User=? AND Host=?", user, host).Scan(&n); err != nil {
			return nil, fmt.Errorf("look up account %s: %w", a.grantee, err)
		}
		if n > 0 {
			continue
		}
		if _, err := dst.ExecContext(ctx, a.create); err != nil {
			return nil, fmt.Errorf("create account %s: %w", a.grantee, err)
		}
		made = append(made, a)
	}
	return made, nil
}

// grantAccounts replays the grants of the accounts createAccounts made,
// after the objects they name exist.
func grantAccounts(ctx context.Context, dst *sql.Conn, accts []account) error {
	for _, a := range accts {
		for _, g := range a.grants {
			if _, err := dst.ExecContext(ctx, g); err != nil {
				return fmt.Errorf("grant to %s: %w", a.grantee, err)
			}
		}
	}
	return nil
}

// splitGrantee reads 'user'@'host'.
func splitGrantee(g string) (string, string) {
	i := strings.LastIndex(g, "@")
	if i < 0 {
		return strings.Trim(g, "'`"), "%"
	}
	un := func(s string) string {
		s = strings.Trim(s, "'`")
		return strings.ReplaceAll(strings.ReplaceAll(s, `\'`, `'`), `''`, `'`)
	}
	return un(g[:i]), un(g[i+1:])
}
