package verify

import (
	"database/sql"
	"path"
	"sort"
	"strings"

	"github.com/pristinedb/pristine/internal/quote"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// pristineUsers are the accounts pristine itself makes in templates and
// slots (the template account, one account per lease), as user@host
// patterns; they are left out too.
var pristineUsers = []string{"pristine@%", "lease_*@%", mariadb.OwnerUser + "@" + mariadb.OwnerHost}

// ignored reports whether account user@host is a system account
// (capture.SystemAccount: root@*, anonymous accounts, mariadb.sys, ...) or
// matches one of the patterns (path.Match syntax: * and ? are wildcards).
func ignored(user, host string, patterns []string) bool {
	if capture.SystemAccount(user, host) {
		return true
	}
	for _, p := range patterns {
		u, h, ok := strings.Cut(p, "@")
		if !ok {
			h = "*"
		}
		mu, _ := path.Match(u, user)
		mh, _ := path.Match(h, host)
		if mu && (mh || h == host) {
			return true
		}
	}
	return false
}

// users reads the accounts and roles with their grants (authentication
// only with Options.Passwords): by default those in
// scope of the compared schemas (capture.AccountScope, the rule captures
// follow), with the grants a capture carries (capture.CarriedGrant); with
// Options.AllUsers every account but the system's, with every grant. A
// server that does not let the account read them gets a note; an account
// the server cannot show (SHOW CREATE USER fails, as for a host name under
// --skip-name-resolve) is compared by its mysql.global_priv row and the
// error, with a note, never failing the comparison.
func (r *reader) users(opt Options) error {
	ignore := append(append([]string(nil), pristineUsers...), opt.IgnoreUsers...)
	schemas := make([]string, len(r.schemas))
	for i, s := range r.schemas {
		schemas[i] = r.canon.schema(s)
	}
	var accts []capture.Account
	var err error
	if opt.AllUsers {
		err = r.query(r.flavor.AccountsQuery(), func(_, row []string) error {
			accts = append(accts, capture.Account{User: row[0], Host: row[1], Role: row[2] == "Y"})
			return nil
		})
	} else {
		accts, err = capture.AccountScope(r.ctx, r.c, r.flavor, r.schemas)
	}
	if err != nil {
		r.s.notes = append(r.s.notes, "users, roles and grants not compared: "+err.Error())
		return nil
	}
	roles := map[string]bool{}
	for _, a := range accts {
		if a.Role {
			roles[a.User] = true
		}
	}
	for _, a := range accts {
		if ignored(a.User, a.Host, ignore) {
			continue
		}
		o := newObject()
		if a.Role {
			r.s.objs[objKey{"role", quote.Ident(a.User)}] = o
			r.grants(o, a.Grantee(), !opt.AllUsers, opt.Passwords, schemas, roles)
			continue
		}
		name := a.Grantee()
		r.s.objs[objKey{"user", name}] = o
		err := r.query("SHOW CREATE USER "+name, func(_, row []string) error {
			if !opt.Passwords {
				row[0] = capture.WithoutAuthentication(row[0])
			}
			o.set("create", row[0])
			return nil
		})
		if err != nil {
			drop := "'$.password_last_changed'"
			if !opt.Passwords {
				drop += ", '$.plugin', '$.authentication_string', '$.auth_or'"
			}
			var priv sql.NullString
			rerr := r.c.QueryRowContext(r.ctx, "SELECT JSON_REMOVE(Priv, "+drop+") FROM mysql.global_priv WHERE User = ? AND Host = ?", a.User, a.Host).Scan(&priv)
			if rerr != nil {
				priv.String = "not readable: " + rerr.Error()
			}
			o.set("create", "SHOW CREATE USER failed: "+errText(err)+"; mysql.global_priv: "+priv.String)
			r.s.notes = append(r.s.notes, "user "+name+": SHOW CREATE USER failed ("+errText(err)+"); compared by its mysql.global_priv row")
		}
		r.grants(o, name, !opt.AllUsers, opt.Passwords, schemas, roles)
	}
	return nil
}

// errText is an error's message without the query verify's query helper
// puts in front of it, so both sides print the same text.
func errText(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": Error "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// grants stores SHOW GRANTS, one part per grant statement, keyed by what it
// grants on: a difference names the grant. When scoped, only the grants a
// capture carries are kept (capture.CarriedGrant). A server that cannot
// show them stores the error as the part, so it differs from a side that
// can. Without passwords, the IDENTIFIED clause SHOW GRANTS may print is
// left out.
func (r *reader) grants(o *object, name string, scoped, passwords bool, schemas []string, roles map[string]bool) {
	var all []string
	err := r.query("SHOW GRANTS FOR "+name, func(_, row []string) error {
		g := r.canon.text(row[0])
		if !passwords {
			g = capture.WithoutAuthentication(g)
		}
		if !scoped || capture.CarriedGrant(g, schemas, roles) {
			all = append(all, g)
		}
		return nil
	})
	if err != nil {
		o.set("grants", "SHOW GRANTS failed: "+errText(err))
		return
	}
	sort.Strings(all)
	for _, g := range all {
		o.set(grantKey(g), g)
	}
}

// grantKey names a grant by its object: "grant on `app`.*", "grant role".
func grantKey(g string) string {
	if i := strings.Index(g, " ON "); i >= 0 {
		rest := g[i+4:]
		if j := strings.Index(rest, " TO "); j >= 0 {
			return "grant on " + rest[:j]
		}
	}
	if strings.HasPrefix(g, "SET DEFAULT ROLE") {
		return "default role"
	}
	return "grant " + abbrev(g, 80)
}
