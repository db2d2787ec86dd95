// Package quote writes names and values into SQL text, and words into the
// few shell command lines pristine writes. Every package that builds a
// statement or a command line from a name or a value it did not write
// itself quotes through here, so there is one escaping rule to review.
//
// The rules assume the server's default sql_mode (NO_BACKSLASH_ESCAPES and
// ANSI_QUOTES off), which every server pristine starts runs with and which
// the sessions it opens on a source server set.
package quote

import "strings"

// Ident quotes an identifier (schema, table, column, routine) with
// backticks, doubling any backtick inside it.
func Ident(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// Qualified quotes schema.name as `schema`.`name`.
func Qualified(schema, name string) string { return Ident(schema) + "." + Ident(name) }

var stringEscapes = strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`)

// String quotes s as a string literal: backslash, quote and NUL are
// escaped with a backslash.
func String(s string) string { return "'" + stringEscapes.Replace(s) + "'" }

// Account quotes an account name as 'user'@'host'.
func Account(user, host string) string { return String(user) + "@" + String(host) }

// Shell quotes s as one word for a POSIX shell: in single quotes, where a
// single quote of s closes them, follows escaped by a backslash, and opens
// them again.
func Shell(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
