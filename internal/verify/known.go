package verify

import (
	"regexp"
	"strings"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// A template never runs an object as an administrative account, nor as
// an account with a global privilege (docs/security.md, "No definer
// gadget"): the build re-owns the views, triggers, routines and events of
// root, the build account and pristine's own by the template's owner
// account (mariadb.OwnerUser), and takes global privileges and privileges
// on the mysql schema from the other DEFINERs and the roles they can set,
// granting the database-level ones among them on `%`. A copy differs from
// its source there by design: verify reports these differences as known
// (Report.Known), apart from the differences that make it fail.

// definerRe finds a DEFINER clause as SHOW CREATE prints it, with
// backticks (or double quotes under ANSI_QUOTES).
var definerRe = regexp.MustCompile("DEFINER=(`(?:[^`]|``)*`|\"(?:[^\"]|\"\")*\")@(`(?:[^`]|``)*`|\"(?:[^\"]|\"\")*\")")

func unquoteName(s string) string {
	if len(s) < 2 {
		return s
	}
	q := s[:1]
	return strings.ReplaceAll(s[1:len(s)-1], q+q, q)
}

// reowned reports whether the source's text a and the target's text b of
// an object differ only in a DEFINER clause that names an administrative
// account in a and the owner account in b.
func reowned(schema, a, b string) bool {
	ma, mb := definerRe.FindStringSubmatchIndex(a), definerRe.FindStringSubmatchIndex(b)
	if ma == nil || mb == nil {
		return false
	}
	if a[:ma[0]] != b[:mb[0]] || a[ma[1]:] != b[mb[1]:] {
		return false
	}
	ua, ha := unquoteName(a[ma[2]:ma[3]]), unquoteName(a[ma[4]:ma[5]])
	ub, hb := unquoteName(b[mb[2]:mb[3]]), unquoteName(b[mb[4]:mb[5]])
	return ub == mariadb.OwnerUser && hb == mariadb.OwnerHost && mariadb.AdminDefiner(ua, ha, schema) && (ua != ub || ha != hb)
}

// reducedGlobal reports whether a user's or role's grant on *.* lost its
// privileges: the target grants USAGE only where the source granted more.
func reducedGlobal(part, a, b string) bool {
	if part != "grant on *.*" {
		return false
	}
	return strings.HasPrefix(b, "GRANT USAGE ON *.* TO ") && !strings.HasPrefix(a, "GRANT USAGE ON *.* TO ")
}

// splitKnown moves the differences pristine makes on purpose from diffs
// to the known ones: re-owned DEFINERs, reduced global privileges, and
// the grants on `%` and mysql a reduction adds (seen with --all-users).
func splitKnown(diffs []Diff) (rest, known []Diff) {
	reduced := map[string]bool{}
	for _, d := range diffs {
		if (d.Kind == "user" || d.Kind == "role") && d.Change == Differs && reducedGlobal(d.Part, d.Source, d.Target) {
			reduced[d.Kind+" "+d.Object] = true
		}
	}
	for _, d := range diffs {
		switch {
		case d.Change == Differs && definerKind[d.Kind] && reowned(schemaOf(d.Object), d.Source, d.Target):
			known = append(known, d)
		case (d.Kind == "user" || d.Kind == "role") && d.Part == "grant on `mysql`.*" && d.Change != Missing &&
			strings.HasPrefix(d.Target, "GRANT SHOW VIEW ON `mysql`.* TO "):
			known = append(known, d) // the exact entry that keeps a wildcard grant off mysql
		case reduced[d.Kind+" "+d.Object] && (d.Part == "grant on *.*" ||
			(d.Change != Missing && (strings.HasPrefix(d.Part, "grant on `%`.") || strings.HasPrefix(d.Part, "grant on `mysql`.")))):
			known = append(known, d)
		default:
			rest = append(rest, d)
		}
	}
	return rest, known
}

// definerKind are the kinds of object that have a DEFINER.
var definerKind = map[string]bool{"view": true, "trigger": true, "procedure": true, "function": true,
	"package": true, "package body": true, "event": true}

// schemaOf is the schema of a qualified name `schema`.`name`.
func schemaOf(qualified string) string {
	if !strings.HasPrefix(qualified, "`") {
		return ""
	}
	for i := 1; i < len(qualified); i++ {
		if qualified[i] == '`' {
			if i+1 < len(qualified) && qualified[i+1] == '`' {
				i++
				continue
			}
			return strings.ReplaceAll(qualified[1:i], "``", "`")
		}
	}
	return ""
}

// knownNote says in words what a known difference is.
func knownNote(d Diff) string {
	if definerKind[d.Kind] {
		return "re-owned: an administrative DEFINER became the template's owner account, which has a lease's privileges"
	}
	return "reduced: a DEFINER (or a role it can set) has no global privilege or privilege on mysql in a template"
}
