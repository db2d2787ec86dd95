package capture

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
)

// account is a user that holds privileges on a captured database, with
// the statements that recreate it.
type account struct {
	grantee string // 'user'@'host'
	create  string // SHOW CREATE USER
	grants  []string
}

// readAccounts reads the accounts in scope of the databases (AccountScope:
// definers of captured objects, holders of privileges on captured schemas,
// the roles granted to them; never the system accounts) with SHOW CREATE
// USER and SHOW GRANTS, keeping the grants on *.*, on those databases and
// of roles in scope. Reading the mysql schema needs SELECT on it; without
// it no account is copied, and skipped says so. An account the source
// cannot show (a host name under --skip-name-resolve) is skipped with a
// note too.
func readAccounts(ctx context.Context, db *sql.DB, f mariadb.Flavor, dbs []string) (accts []account, skipped string, err error) {
	scope, err := AccountScope(ctx, db, f, dbs)
	if err != nil {
		if isAccessDenied(err) {
			return nil, "accounts are not copied: grant SELECT ON mysql.* to copy the accounts of the captured databases", nil
		}
		return nil, "", fmt.Errorf("list the accounts of the captured databases: %w", err)
	}
	if stmt := f.HexHashesStatement(); stmt != "" {
		// Hashes as hex, which CREATE USER takes back (MySQL's are binary).
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, "", fmt.Errorf("set print_identified_with_as_hex: %w", err)
		}
	}
	roles := map[string]bool{}
	for _, a := range scope {
		if a.Role {
			roles[a.User] = true
		}
	}
	// Roles first: a MySQL CREATE USER names its DEFAULT ROLE, which must
	// exist.
	sort.SliceStable(scope, func(i, j int) bool { return scope[i].Role && !scope[j].Role })
	var unreadable []string
	for _, sa := range scope {
		g := sa.Grantee()
		var create string
		if sa.Role && f.RolesByName() {
			// SHOW CREATE USER does not know a MariaDB role; its grants are read
			// by its bare name.
			create = "CREATE ROLE " + quote.Ident(sa.User)
		} else if err := db.QueryRowContext(ctx, "SHOW CREATE USER "+g).Scan(&create); err != nil {
			if isAccessDenied(err) {
				return nil, "accounts are not copied: grant SELECT ON mysql.* to copy the accounts of the captured databases", nil
			}
			unreadable = append(unreadable, fmt.Sprintf("%s (%v)", g, err))
			continue
		}
		lines, err := queryStrings(ctx, db, "SHOW GRANTS FOR "+g)
		if err != nil {
			return nil, "", fmt.Errorf("show grants for %s: %w", g, err)
		}
		a := account{grantee: g, create: create}
		for _, l := range lines {
			if CarriedGrant(l, dbs, roles) {
				a.grants = append(a.grants, l)
			}
		}
		accts = append(accts, a)
	}
	if len(unreadable) > 0 {
		skipped = "accounts the source cannot show are not copied: " + strings.Join(unreadable, ", ")
	}
	return accts, skipped, nil
}

var grantOnRe = regexp.MustCompile("(?is)^GRANT\\s+.+?\\s+ON\\s+(?:(?:PROCEDURE|FUNCTION|PACKAGE(?:\\s+BODY)?)\\s+)?(\\*|`(?:[^`]|``)*`)\\.")

// A MySQL role has a host: GRANT `r`@`%` TO ...
var grantRoleRe = regexp.MustCompile("(?is)^GRANT\\s+(`(?:[^`]|``)*`|'(?:[^']|'')*'|\\w+)(?:@(?:`(?:[^`]|``)*`|'(?:[^']|'')*'|[\\w.%]+))?\\s+TO\\s+")

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

// CarriedGrant reports whether a SHOW GRANTS line travels with an account
// in scope of dbs: a grant on *.* or on one of dbs, a grant of one of
// roles, or SET DEFAULT ROLE to one of them. Grants on other databases and
// PROXY grants stay behind. verify compares the same lines.
func CarriedGrant(line string, dbs []string, roles map[string]bool) bool {
	return keepGrant(line, dbs) || grantsRole(line, roles) || setsRole(line, roles)
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
// Unless withPasswords, an account gets a random password instead of the
// source's authentication (see WithoutAuthentication).
func createAccounts(ctx context.Context, dst *sql.Conn, accts []account, withPasswords bool) ([]account, error) {
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
		create := a.create
		if !withPasswords && !strings.HasPrefix(create, "CREATE ROLE ") {
			var err error
			if create, err = unusableCreate(create); err != nil {
				return nil, fmt.Errorf("create account %s: %w", a.grantee, err)
			}
		}
		if _, err := dst.ExecContext(ctx, create); err != nil {
			return nil, fmt.Errorf("create account %s: %w", a.grantee, err)
		}
		if !withPasswords {
			// SHOW GRANTS prints the hash too: GRANT USAGE ON *.* TO ...
			// IDENTIFIED BY PASSWORD '...'.
			grants := make([]string, len(a.grants))
			for i, g := range a.grants {
				grants[i] = WithoutAuthentication(g)
			}
			a.grants = grants
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
