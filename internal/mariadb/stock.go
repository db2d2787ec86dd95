package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
)

// A server pristine starts is the stock server of its family and version,
// as a user would run it from the distribution's package, in everything
// that changes query results (docs/servers.md, "Server defaults"): its
// compiled defaults, plus what the package's option files set on top of
// them. Only the latter need saying, and StockOptions says them. Options
// pristine sets for speed or isolation (profile.go, instance.go) change no
// result of a query on the data, with the exceptions docs/servers.md
// lists.

// StockOptions are the options, beyond the compiled defaults, that the
// distribution's package gives b's server and that change query results:
//
//   - MariaDB before 11.6 defaults to latin1; Debian's package (and
//     MariaDB's own) sets utf8mb4 with utf8mb4_general_ci in
//     /etc/mysql/mariadb.conf.d/50-server.cnf (MariaDB 10.11 in Debian 12).
//   - MariaDB 11.6 and later default to utf8mb4 with utf8mb4_uca1400_ai_ci
//     (character_set_collations), and the package sets no character set
//     (MariaDB 11.8 in Debian 13): none.
//   - MySQL 8.0 and later default to utf8mb4 with utf8mb4_0900_ai_ci, and
//     Debian's mysqld.cnf sets only paths: none.
//
// Nil for a nil b.
func (b *Binary) StockOptions() []string {
	if b != nil && b.Flavor == MariaDB && (b.Major < 11 || b.Major == 11 && b.Minor < 6) {
		return []string{"character-set-server=utf8mb4", "collation-server=utf8mb4_general_ci"}
	}
	return nil
}

// ServerOptions are the options a server of b runs with for a template's
// own options: the stock options (StockOptions) with the template's laid
// over them (LayerOptions). A template records them, so that its key and
// meta.json say what its server was; laying them over the stock options
// again at every start changes nothing.
func (b *Binary) ServerOptions(own []string) []string {
	return LayerOptions(b.StockOptions(), own)
}

// LayerOptions lays the options over on base, as a later option file
// does an earlier one: an option of over replaces base's of the same name
// (however spelled: '_' or '-', a loose- prefix) in place, others are
// added in order. A character set is one setting with its collation: over
// naming character-set-server but no collation-server drops base's
// collation-server, so that the server takes the new character set's
// default collation rather than refusing a collation of another set.
func LayerOptions(base, over []string) []string {
	names := map[string]bool{}
	for _, o := range over {
		names[optionName(o)] = true
	}
	dropCollation := names["character-set-server"] && !names["collation-server"]
	var out []string
	for _, o := range base {
		n := optionName(o)
		if names[n] || dropCollation && n == "collation-server" {
			continue
		}
		out = append(out, o)
	}
	return append(out, over...)
}

// sourceVariables are the settings of a live server that a physical copy
// of its data (a mariadb-backup copy, a MySQL clone) needs on the server
// that starts it: the character set and collation (MySQL's clone plugin
// refuses a recipient whose differ, and they are the defaults the
// source's users get), and, where not the default, how table names are
// stored and the InnoDB page size (the data was made with them). Each
// with its option and the value that needs no option ("" for none).
var sourceVariables = []struct{ variable, option, unless string }{
	{"character_set_server", "character-set-server", ""},
	{"collation_server", "collation-server", ""},
	{"lower_case_table_names", "lower-case-table-names", "0"},
	{"innodb_page_size", "innodb-page-size", "16384"},
}

// SourceOptions reads the settings of the live server db that a physical
// copy of its data needs (sourceVariables) and returns them as server
// options, for the template made from the copy.
func SourceOptions(ctx context.Context, db *sql.DB) ([]string, error) {
	var out []string
	for _, v := range sourceVariables {
		var val sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+v.variable).Scan(&val); err != nil {
			return nil, fmt.Errorf("read the source's %s: %w", v.variable, err)
		}
		if !val.Valid || val.String == v.unless {
			continue
		}
		if _, err := strconv.Atoi(val.String); err != nil && v.unless != "" {
			return nil, fmt.Errorf("the source's %s is %q, not a number", v.variable, val.String)
		}
		out = append(out, v.option+"="+val.String)
	}
	return out, CheckTemplateOptions(out)
}
