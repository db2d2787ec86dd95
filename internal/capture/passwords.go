package capture

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"regexp"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
)

// Passwords: a capture carries the accounts of its databases (AccountScope)
// but, unless told WithPasswords (`template build --with-passwords`), not
// their authentication: production password hashes do not belong in a CI
// template. Each account gets a random password that is never stored or
// shown, so it exists for its grants and as a DEFINER but nobody can log
// in as it; an --init-cmd can give it a known one (ALTER USER). verify
// leaves authentication out of its comparison unless told to compare it.

// identifiedRe is the IDENTIFIED clause of SHOW CREATE USER: from
// IDENTIFIED to the next clause (REQUIRE, WITH, PASSWORD EXPIRE, ACCOUNT)
// or the end. Hashes and plugin strings hold no spaces.
// MySQL spells it IDENTIFIED WITH 'plugin' [AS 'hash'], and may put
// DEFAULT ROLE after it.
var identifiedRe = regexp.MustCompile(`(?s) IDENTIFIED (?:BY|VIA|WITH) .*?( DEFAULT ROLE | REQUIRE | WITH | PASSWORD EXPIRE| ACCOUNT (?:UN)?LOCK|$)`)

// WithoutAuthentication removes the IDENTIFIED clause (password hash,
// authentication plugins) from a CREATE USER statement as SHOW CREATE USER
// prints it, or from a SHOW GRANTS line (GRANT USAGE ON *.* TO ...
// IDENTIFIED BY PASSWORD '...'); the rest (TLS requirements, limits,
// expiry, lock, WITH GRANT OPTION) stays.
func WithoutAuthentication(create string) string {
	return identifiedRe.ReplaceAllString(create, "$1")
}

var createUserRe = regexp.MustCompile("^CREATE USER `(?:[^`]|``)*`@`(?:[^`]|``)*`")

// unusableCreate rewrites SHOW CREATE USER text so that the account gets a
// random password instead of the source's authentication.
func unusableCreate(create string) (string, error) {
	s := WithoutAuthentication(create)
	loc := createUserRe.FindStringIndex(s)
	if loc == nil {
		return "", fmt.Errorf("unexpected SHOW CREATE USER output %q", abbrevText(s, 60))
	}
	return s[:loc[1]] + " IDENTIFIED BY '" + rand.Text() + "'" + s[loc[1]:], nil
}

// resetPasswords gives each account (not a role) a random password on db,
// a server of flavour f: by ALTER USER where that reaches every account,
// else by its mysql.global_priv row (Flavor.PasswordByAlterUser). The
// caller reloads the grant tables.
func resetPasswords(ctx context.Context, db *sql.DB, f mariadb.Flavor, accts []Account) error {
	for _, a := range accts {
		if a.Role {
			continue
		}
		if f.PasswordByAlterUser() {
			// MySQL has no mysql.global_priv nor PASSWORD(); ALTER USER
			// reaches every account, a host name's too.
			if _, err := db.ExecContext(ctx, "ALTER USER "+a.Grantee()+" IDENTIFIED BY '"+rand.Text()+"'"); err != nil {
				return fmt.Errorf("replace the password of %s: %w", a.Grantee(), err)
			}
			continue
		}
		var hash string
		if err := db.QueryRowContext(ctx, "SELECT PASSWORD('"+rand.Text()+"')").Scan(&hash); err != nil {
			return fmt.Errorf("make a random password for %s: %w", a.Grantee(), err)
		}
		q := "UPDATE mysql.global_priv SET Priv = JSON_SET(JSON_REMOVE(Priv, '$.auth_or'), '$.plugin', 'mysql_native_password', '$.authentication_string', " +
			quote.String(hash) + ") WHERE User = " + quote.String(a.User) + " AND Host = " + quote.String(a.Host)
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("replace the password of %s: %w", a.Grantee(), err)
		}
	}
	return nil
}

func abbrevText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
