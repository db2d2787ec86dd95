package capture

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/sqlrows"
)

// Account is a user (user@host) or a role (Role set, Host empty) of a
// server.
type Account struct {
	User, Host string
	Role       bool
}

// Grantee names the account as SHOW GRANTS FOR and DROP USER take it:
// 'user'@'host', or a role's quoted name.
func (a Account) Grantee() string {
	if a.Role {
		return quote.String(a.User)
	}
	return quote.String(a.User) + "@" + quote.String(a.Host)
}

// systemUsers are account names that belong to the host, whatever their
// host part: the administrator, the server's own accounts and pristine's.
// MySQL's own are mysql.sys, mysql.session and mysql.infoschema.
var systemUsers = map[string]bool{"root": true, "mariadb.sys": true, "mysql": true, "PUBLIC": true, "pristine": true, "pristine_owner": true,
	"mysql.sys": true, "mysql.session": true, "mysql.infoschema": true}

// SystemAccount reports whether user@host is the host's, not a schema's:
// root@* (localhost, 127.0.0.1, ::1, the host name), the anonymous
// accounts (an empty user name, any host) a default
// mariadb-install-db makes, mariadb.sys, MySQL's mysql.sys, mysql.session
// and mysql.infoschema, mysql,
// PUBLIC and pristine's own accounts (the build account and a template's
// owner account, mariadb.OwnerUser). No capture carries them and verify
// does not compare them (docs/fidelity.md, "Accounts").
func SystemAccount(user, host string) bool {
	return user == "" || systemUsers[user]
}

// queryer is a *sql.DB or a *sql.Conn.
type queryer = sqlrows.Queryer

// AccountScope lists the accounts a capture of dbs carries, and which
// verify compares for those schemas. It is one rule for every path:
//
//  1. the DEFINERs of the views, routines, triggers and events in dbs;
//  2. the accounts and roles holding a privilege on one of dbs at the
//     schema, table, column or routine level (mysql.db, tables_priv,
//     columns_priv, procs_priv; a schema grant with wildcards in its name
//     does not count);
//  3. the roles granted to an account of 1 or 2, and theirs, transitively;
//
// less the system accounts (SystemAccount) and definers that do not exist.
// The mysql schema is read with the queries of the server's flavour f.
// An account with global privileges only (an administrator's, a backup
// account's) is the host's and not in scope. Reading the mysql schema needs
// SELECT on it; the error is returned as is (see isAccessDenied).
func AccountScope(ctx context.Context, db queryer, f mariadb.Flavor, dbs []string) ([]Account, error) {
	if len(dbs) == 0 {
		return nil, nil
	}
	type key struct{ user, host string }
	exists := map[key]bool{} // -> is a role
	if err := scan(ctx, db, f.AccountsQuery(), func(r []string) { exists[key{r[0], r[1]}] = r[2] == "Y" }); err != nil {
		return nil, err
	}
	in := make([]string, len(dbs))
	for i, d := range dbs {
		in[i] = quote.String(d)
	}
	list := "(" + strings.Join(in, ",") + ")"
	scope := map[key]bool{}
	add := func(r []string) {
		if k := (key{r[0], r[1]}); !scope[k] {
			if _, ok := exists[k]; ok {
				scope[k] = true
			}
		}
	}
	for _, q := range []string{
		"SELECT User, Host FROM mysql.db WHERE Db IN " + list,
		"SELECT User, Host FROM mysql.tables_priv WHERE Db IN " + list,
		"SELECT User, Host FROM mysql.columns_priv WHERE Db IN " + list,
		"SELECT User, Host FROM mysql.procs_priv WHERE Db IN " + list,
	} {
		if err := scan(ctx, db, q, add); err != nil {
			return nil, err
		}
	}
	definers := `SELECT DISTINCT DEFINER FROM (
	 SELECT DEFINER FROM information_schema.VIEWS WHERE TABLE_SCHEMA IN ` + list + `
	 UNION SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA IN ` + list + `
	 UNION SELECT DEFINER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA IN ` + list + `
	 UNION %s) d`
	addDefiner := func(r []string) {
		if i := strings.LastIndex(r[0], "@"); i >= 0 {
			add([]string{r[0][:i], r[0][i+1:]})
		} else {
			add([]string{r[0], ""}) // a role
		}
	}
	if err := scan(ctx, db, fmt.Sprintf(definers, f.EventDefinersQuery(list)), addDefiner); err != nil {
		return nil, err
	}
	granted := map[key][]key{}
	if err := scan(ctx, db, f.RoleGrantsQuery(), func(r []string) {
		granted[key{r[0], r[1]}] = append(granted[key{r[0], r[1]}], key{r[2], r[3]})
	}); err != nil {
		return nil, err
	}
	for todo := keys(scope); len(todo) > 0; {
		k := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, r := range granted[k] {
			if _, ok := exists[r]; ok && !scope[r] {
				scope[r] = true
				todo = append(todo, r)
			}
		}
	}
	var out []Account
	for k := range scope {
		if !SystemAccount(k.user, k.host) {
			out = append(out, Account{User: k.user, Host: k.host, Role: exists[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].User != out[j].User {
			return out[i].User < out[j].User
		}
		return out[i].Host < out[j].Host
	})
	return out, nil
}

func keys[K comparable](m map[K]bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// scan runs q and calls f with each row as strings (NULL as "").
func scan(ctx context.Context, db queryer, q string, f func([]string)) error {
	err := sqlrows.Each(ctx, db, q, "", func(_, row []string) error { f(row); return nil })
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Fields(q)[0]+" "+firstTable(q), err)
	}
	return nil
}

// firstTable names the table a query reads, for its error message.
func firstTable(q string) string {
	f := strings.Fields(q)
	for i, w := range f {
		if strings.EqualFold(w, "FROM") && i+1 < len(f) && f[i+1] != "(" {
			return "FROM " + f[i+1]
		}
	}
	return "..."
}

// PruneAccounts makes a physical copy's accounts follow the rule a logical
// capture follows (AccountScope): on the copy's server db, started with
// its grant tables loaded, it removes the accounts and roles out of scope
// of dbs and the grants of accounts in scope on other databases, and PROXY
// grants, by editing the grant tables (an account the server ignores, such
// as a host name under --skip-name-resolve, cannot be dropped by DROP
// USER), then reloads them. System accounts (SystemAccount) are left to
// the template build. Unless withPasswords, the accounts kept get a random
// password instead of the source's (see WithoutAuthentication). f is the
// copy's flavour: the source's, since a physical copy is started by the
// same server. It returns the number of accounts removed.
func PruneAccounts(ctx context.Context, db *sql.DB, f mariadb.Flavor, dbs []string, withPasswords bool) (int, error) {
	keep, err := AccountScope(ctx, db, f, dbs)
	if err != nil {
		return 0, fmt.Errorf("list the copy's accounts in scope: %w", err)
	}
	in := map[Account]bool{}
	for _, a := range keep {
		in[Account{User: a.User, Host: a.Host}] = true
	}
	// The grant tables, and the user and host columns of each.
	accounts, tables := f.GrantTables()
	var drop []Account
	if err := scan(ctx, db, "SELECT User, Host FROM mysql."+accounts, func(r []string) {
		if a := (Account{User: r[0], Host: r[1]}); !SystemAccount(a.User, a.Host) && !in[a] {
			drop = append(drop, a)
		}
	}); err != nil {
		return 0, fmt.Errorf("list the copy's accounts: %w", err)
	}
	var stmts []string
	for _, a := range drop {
		u, h := quote.String(a.User), quote.String(a.Host)
		for _, t := range tables {
			stmts = append(stmts, "DELETE FROM mysql."+t.Name+" WHERE "+t.User+" = "+u+" AND "+t.Host+" = "+h)
		}
		if a.Host == "" && f.RolesByName() {
			stmts = append(stmts, "DELETE FROM mysql.roles_mapping WHERE Role = "+u)
		}
	}
	list := make([]string, len(dbs))
	for i, d := range dbs {
		list[i] = quote.String(d)
	}
	for _, a := range keep {
		u, h := quote.String(a.User), quote.String(a.Host)
		for _, t := range []string{"db", "tables_priv", "columns_priv", "procs_priv"} {
			stmts = append(stmts, "DELETE FROM mysql."+t+" WHERE User = "+u+" AND Host = "+h+" AND Db NOT IN ("+strings.Join(list, ",")+")")
		}
		stmts = append(stmts, "DELETE FROM mysql.proxies_priv WHERE User = "+u+" AND Host = "+h)
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return 0, fmt.Errorf("remove the accounts out of scope from the copy: %s: %w", q, err)
		}
	}
	if !withPasswords {
		if err := resetPasswords(ctx, db, f, keep); err != nil {
			return 0, err
		}
	}
	if _, err := db.ExecContext(ctx, "FLUSH PRIVILEGES"); err != nil {
		return 0, fmt.Errorf("reload the copy's grant tables: %w", err)
	}
	return len(drop), nil
}
