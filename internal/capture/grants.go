package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/pristinedb/pristine/internal/quote"
)

// ErrPrivilege is wrapped by errors about a privilege the source user lacks;
// the message names the privilege and the GRANT that fixes it.
var ErrPrivilege = errors.New("missing privilege")

// grants are the privileges of the capturing user, read from SHOW GRANTS.
type grants struct {
	user   string          // CURRENT_USER(), e.g. "app@localhost"
	global map[string]bool // privileges ON *.*
	// db maps a database name or LIKE pattern to its privileges.
	db map[string]map[string]bool
	// tableLevel lists databases where some table or routine has grants.
	tableLevel map[string]bool
}

var grantRe = regexp.MustCompile("(?is)^GRANT\\s+(.+?)\\s+ON\\s+(?:(?:PROCEDURE|FUNCTION|PACKAGE(?:\\s+BODY)?)\\s+)?(\\*|`(?:[^`]|``)*`)\\.(\\*|`(?:[^`]|``)*`)\\s+TO\\s")

func readGrants(ctx context.Context, db *sql.DB) (*grants, error) {
	g := &grants{global: map[string]bool{}, db: map[string]map[string]bool{}, tableLevel: map[string]bool{}}
	if err := db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&g.user); err != nil {
		return nil, fmt.Errorf("read current user: %w", err)
	}
	lines, err := queryStrings(ctx, db, "SHOW GRANTS")
	if err != nil {
		return nil, fmt.Errorf("show grants: %w", err)
	}
	for _, l := range lines {
		g.add(l)
	}
	return g, nil
}

// add records one line of SHOW GRANTS.
func (g *grants) add(line string) {
	m := grantRe.FindStringSubmatch(line)
	if m == nil {
		return // a role grant or PROXY
	}
	privs := splitPrivileges(m[1])
	dbName, table := unquote(m[2]), m[3]
	switch {
	case dbName == "*":
		for p := range privs {
			g.global[p] = true
		}
	case table == "*":
		if g.db[dbName] == nil {
			g.db[dbName] = map[string]bool{}
		}
		for p := range privs {
			g.db[dbName][p] = true
		}
	default:
		g.tableLevel[dbName] = true
	}
}

// splitPrivileges reads "SELECT, INSERT (a, b), SHOW VIEW" into a set;
// ALL PRIVILEGES counts as every privilege.
func splitPrivileges(s string) map[string]bool {
	out := map[string]bool{}
	depth := 0
	cur := strings.Builder{}
	flush := func() {
		p := strings.ToUpper(strings.TrimSpace(cur.String()))
		if i := strings.IndexByte(p, '('); i >= 0 {
			p = strings.TrimSpace(p[:i])
		}
		if p != "" {
			out[p] = true
		}
		cur.Reset()
	}
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '`' {
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	}
	return s
}

// has reports whether the user holds priv globally or on database db (""
// means globally only).
func (g *grants) has(priv, db string) bool {
	if g.global[priv] || g.global["ALL PRIVILEGES"] {
		return true
	}
	if db == "" {
		return false
	}
	for pat, ps := range g.db {
		if (ps[priv] || ps["ALL PRIVILEGES"]) && likeMatch(pat, db) {
			return true
		}
	}
	return false
}

// likeMatch matches a database name against a grant's LIKE pattern (%, _
// and backslash escapes).
func likeMatch(pat, s string) bool {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '%':
			re.WriteString(".*")
		case '_':
			re.WriteString(".")
		case '\\':
			if i+1 < len(pat) {
				i++
				re.WriteString(regexp.QuoteMeta(string(pat[i])))
			}
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	ok, _ := regexp.MatchString(re.String(), s)
	return ok
}

// missing builds the error for a privilege the user lacks.
func (g *grants) missing(priv, on, why string) error {
	target := "*.*"
	if on != "" {
		target = "`" + on + "`.*"
	}
	return fmt.Errorf("%w: %s lacks %s on %s, needed %s: run GRANT %s ON %s TO %s on the source", ErrPrivilege, g.user, priv, target, why, priv, target, userLiteral(g.user))
}

// userLiteral turns "app@localhost" into 'app'@'localhost'.
func userLiteral(u string) string {
	i := strings.LastIndexByte(u, '@')
	if i < 0 {
		return quote.String(u)
	}
	return quote.String(u[:i]) + "@" + quote.String(u[i+1:])
}

// objectCounts counts the views, triggers, events and routines of db.
type objectCounts struct{ views, triggers, events, routines int }

func countObjects(ctx context.Context, db *sql.DB, schema string) (objectCounts, error) {
	var c objectCounts
	err := db.QueryRowContext(ctx, `SELECT
	 (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA=? AND TABLE_TYPE='VIEW'),
	 (SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA=?),
	 (SELECT COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA=?),
	 (SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA=?)`, schema, schema, schema, schema).
		Scan(&c.views, &c.triggers, &c.events, &c.routines)
	if err != nil {
		return c, fmt.Errorf("inspect database %s: %w", schema, err)
	}
	return c, nil
}

// checkLogical checks up front that the user may read everything a logical
// capture reads. It returns how the snapshot will be shared: "ftwrl" (RELOAD),
// "lock-tables" (LOCK TABLES on every database) or "single" (one connection).
func (s *Source) checkLogical(ctx context.Context) (lockMode string, err error) {
	g := s.grants
	lockTables := true
	for _, d := range s.Databases {
		if !g.has("SELECT", d) && !g.tableLevel[d] {
			return "", g.missing("SELECT", d, "to read its tables")
		}
		c, err := countObjects(ctx, s.DB, d)
		if err != nil {
			return "", err
		}
		if c.views > 0 && !g.has("SHOW VIEW", d) {
			return "", g.missing("SHOW VIEW", d, fmt.Sprintf("to read its %d view(s)", c.views))
		}
		// information_schema hides triggers and events from a user without
		// these privileges, so their absence cannot be told from there.
		if !g.has("TRIGGER", d) {
			return "", g.missing("TRIGGER", d, "to read its triggers (without it they are invisible, and would be silently missing)")
		}
		if !g.has("EVENT", d) {
			return "", g.missing("EVENT", d, "to read its events (without it they are invisible, and would be silently missing)")
		}
		if c.routines > 0 && !g.has("SELECT", "mysql") {
			n, err := foreignRoutines(ctx, s.DB, d, g.user)
			if err != nil {
				return "", err
			}
			if n > 0 {
				return "", fmt.Errorf("%w: %s cannot read the bodies of %d routine(s) in %s it did not define: run GRANT SELECT ON `mysql`.`proc` TO %s on the source", ErrPrivilege, g.user, n, d, userLiteral(g.user))
			}
		}
		if !g.has("LOCK TABLES", d) {
			lockTables = false
		}
	}
	switch {
	case g.has("RELOAD", ""):
		return "ftwrl", nil
	case lockTables:
		return "lock-tables", nil
	default:
		return "single", nil
	}
}

func foreignRoutines(ctx context.Context, db *sql.DB, schema, user string) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA=? AND DEFINER<>?", schema, user).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("inspect routines of %s: %w", schema, err)
	}
	return n, nil
}

// checkPhysical checks the privileges mariadb-backup needs.
func (s *Source) checkPhysical() error {
	for _, p := range []struct{ priv, why string }{
		{"RELOAD", "for mariadb-backup's BACKUP STAGE locks"},
		{"PROCESS", "for mariadb-backup to read InnoDB's state"},
	} {
		if !s.grants.has(p.priv, "") {
			return s.grants.missing(p.priv, "", p.why)
		}
	}
	return nil
}
