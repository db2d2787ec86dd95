package verify

import (
	"regexp"
	"strings"

	"github.com/pristinedb/pristine/internal/quote"
)

var autoIncRe = regexp.MustCompile(`\s+AUTO_INCREMENT=(\d+)`)

// charsetCollateRe is a column's CHARACTER SET before its COLLATE: the
// collation names its character set, and MySQL prints the pair for a
// column re-created from its own SHOW CREATE TABLE where it printed the
// COLLATE alone before (same column, same bytes); both are read as the
// COLLATE alone.
var charsetCollateRe = regexp.MustCompile(` CHARACTER SET \w+ COLLATE `)

// splitCreateTable cuts SHOW CREATE TABLE output into named parts: one per
// column, index and constraint, the column order, the table options, the
// AUTO_INCREMENT counter and the partitioning. The server prints one
// definition per line, so lines are parts.
func splitCreateTable(create string) [][2]string {
	lines := strings.Split(create, "\n")
	var parts [][2]string
	var cols []string
	i := 1
	for ; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, ")") {
			break
		}
		def := strings.TrimSuffix(strings.TrimSpace(l), ",")
		name := partName(def)
		if strings.HasPrefix(name, "column ") {
			def = charsetCollateRe.ReplaceAllString(def, " COLLATE ")
			cols = append(cols, strings.TrimPrefix(name, "column "))
		}
		parts = append(parts, [2]string{name, def})
	}
	parts = append(parts, [2]string{"column order", strings.Join(cols, ", ")})
	if i < len(lines) {
		opts := strings.TrimSpace(strings.TrimPrefix(lines[i], ")"))
		auto := "none"
		if m := autoIncRe.FindStringSubmatch(" " + opts); m != nil {
			auto = m[1]
			opts = strings.TrimSpace(autoIncRe.ReplaceAllString(" "+opts, ""))
		}
		parts = append(parts, [2]string{"options", opts}, [2]string{"AUTO_INCREMENT", auto})
		if rest := strings.TrimSpace(strings.Join(lines[i+1:], "\n")); rest != "" {
			parts = append(parts, [2]string{"partitioning", rest})
		}
	}
	return parts
}

// partName names one line of a CREATE TABLE body.
func partName(def string) string {
	switch {
	case strings.HasPrefix(def, "`"):
		name, _ := readQuoted(def, 0)
		return "column " + quote.Ident(name)
	case strings.HasPrefix(def, "PRIMARY KEY"):
		return "primary key"
	case strings.HasPrefix(def, "CONSTRAINT `"):
		name, end := readQuoted(def, len("CONSTRAINT "))
		if strings.HasPrefix(def[end:], " FOREIGN KEY") {
			return "foreign key " + quote.Ident(name)
		}
		return "check " + quote.Ident(name)
	}
	for _, kw := range []string{"UNIQUE KEY ", "FULLTEXT KEY ", "SPATIAL KEY ", "KEY "} {
		if strings.HasPrefix(def, kw+"`") {
			name, _ := readQuoted(def, len(kw))
			return "index " + quote.Ident(name)
		}
	}
	if i := strings.IndexByte(def, ' '); i > 0 {
		return strings.ToLower(def[:i]) + " " + def[i+1:]
	}
	return def
}
