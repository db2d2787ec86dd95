package verify

import (
	"path"
	"sort"
	"strings"
)

// builtinUsers are the server's own accounts, left out of every comparison.
var builtinUsers = map[string]bool{"root": true, "mariadb.sys": true, "mysql": true, "PUBLIC": true}

// pristineUsers are the accounts pristine itself makes in templates and
// slots (the template account, one account per lease), as user@host
// patterns; they are left out too.
var pristineUsers = []string{"pristine@%", "lease_*@%"}

// ignored reports whether account user@host matches one of the patterns
// (path.Match syntax: * and ? are wildcards).
func ignored(user, host string, patterns []string) bool {
	// Anonymous accounts are dropped by pristine in every data directory
	// it keeps (docs/security.md), like root at other hosts.
	if builtinUsers[user] || user == "" {
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

// users reads the accounts and roles with their grants. A server that does
// not let the account read them gets a note, not a failure.
func (r *reader) users(ignore []string) error {
	ignore = append(append([]string(nil), pristineUsers...), ignore...)
	type acct struct{ user, host string }
	var users, roles []acct
	err := r.query("SELECT User, Host, is_role FROM mysql.user", func(_, row []string) error {
		if ignored(row[0], row[1], ignore) {
			return nil
		}
		if row[2] == "Y" {
			roles = append(roles, acct{row[0], row[1]})
		} else {
			users = append(users, acct{row[0], row[1]})
		}
		return nil
	})
	if err != nil {
		r.s.notes = append(r.s.notes, "users, roles and grants not compared: "+err.Error())
		return nil
	}
	for _, a := range users {
		name := quoteString(a.user) + "@" + quoteString(a.host)
		o := newObject()
		r.s.objs[objKey{"user", name}] = o
		if err := r.query("SHOW CREATE USER "+name, func(_, row []string) error { o.set("create", row[0]); return nil }); err != nil {
			return err
		}
		if err := r.grants(o, name); err != nil {
			return err
		}
	}
	for _, a := range roles {
		name := quoteIdent(a.user)
		o := newObject()
		r.s.objs[objKey{"role", name}] = o
		if err := r.grants(o, quoteString(a.user)); err != nil {
			return err
		}
	}
	return nil
}

// grants stores SHOW GRANTS, one part per grant statement, keyed by what it
// grants on: a difference names the grant.
func (r *reader) grants(o *object, name string) error {
	var all []string
	err := r.query("SHOW GRANTS FOR "+name, func(_, row []string) error {
		all = append(all, r.canon.text(row[0]))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(all)
	for _, g := range all {
		o.set(grantKey(g), g)
	}
	return nil
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
