package sqlload

import "strings"

// Token kinds of the small lexer that classifies statements.
const (
	tokEOF    = iota
	tokWord   // a keyword, unquoted name, number or @variable
	tokQuoted // a `backtick-quoted` name, unquoted
	tokString // a 'string' or "string"
	tokPunct  // any other single byte
)

type token struct {
	kind int
	text string // the word, or the content of a string or quoted name
	up   string // tokWord: text in upper case, for keyword tests
}

// is reports whether t is the unquoted keyword kw (given in upper case).
func (t token) is(kw string) bool { return t.kind == tokWord && t.up == kw }

// isName reports whether t can be a schema object name.
func (t token) isName() bool { return t.kind == tokWord || t.kind == tokQuoted }

// lexer splits statement text into tokens. It skips comments and the markers
// of executable comments (/*!NNNNN and the */ that closes them), so a
// statement reads the same whether or not it was wrapped in one.
type lexer struct {
	s    string
	i    int
	exec int // depth of open executable comments
}

func (l *lexer) next() token {
	for l.i < len(l.s) {
		c := l.s[l.i]
		rest := l.s[l.i:]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.i++
		case c == '#' || (strings.HasPrefix(rest, "--") && (len(rest) == 2 || rest[2] <= ' ')):
			if k := strings.IndexByte(rest, '\n'); k >= 0 {
				l.i += k + 1
			} else {
				l.i = len(l.s)
			}
		case strings.HasPrefix(rest, "/*M!999999"):
			// mariadb-dump's sandbox marker, for the client: no server runs it.
			if k := strings.Index(rest[2:], "*/"); k >= 0 {
				l.i += k + 4
			} else {
				l.i = len(l.s)
			}
		case strings.HasPrefix(rest, "/*!") || strings.HasPrefix(rest, "/*M!"):
			l.i += strings.IndexByte(rest, '!') + 1
			for l.i < len(l.s) && l.s[l.i] >= '0' && l.s[l.i] <= '9' {
				l.i++
			}
			l.exec++
		case strings.HasPrefix(rest, "/*"):
			if k := strings.Index(rest[2:], "*/"); k >= 0 {
				l.i += k + 4
			} else {
				l.i = len(l.s)
			}
		case l.exec > 0 && strings.HasPrefix(rest, "*/"):
			l.i += 2
			l.exec--
		case c == '\'' || c == '"':
			return token{kind: tokString, text: l.quoted(c, true)}
		case c == '`':
			return token{kind: tokQuoted, text: l.quoted(c, false)}
		case isWordByte(c) || c == '@':
			j := l.i + 1
			if c == '@' && j < len(l.s) && l.s[j] == '@' {
				j++
			}
			for j < len(l.s) && isWordByte(l.s[j]) {
				j++
			}
			w := l.s[l.i:j]
			l.i = j
			return token{kind: tokWord, text: w, up: strings.ToUpper(w)}
		default:
			l.i++
			return token{kind: tokPunct, text: string(c)}
		}
	}
	return token{kind: tokEOF}
}

// quoted reads a quoted string or name starting at l.i and returns its
// content with doubled quotes (and, if escapes, backslash escapes) undone.
func (l *lexer) quoted(q byte, escapes bool) string {
	var b strings.Builder
	i := l.i + 1
	for i < len(l.s) {
		c := l.s[i]
		switch {
		case escapes && c == '\\' && i+1 < len(l.s):
			b.WriteByte(l.s[i+1])
			i += 2
			continue
		case c == q && i+1 < len(l.s) && l.s[i+1] == q:
			b.WriteByte(q)
			i += 2
			continue
		case c == q:
			l.i = i + 1
			return b.String()
		}
		b.WriteByte(c)
		i++
	}
	l.i = len(l.s)
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 ||
		(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// tokens returns up to n tokens of s (all of them if n < 0), and whether that
// was all of s.
func tokens(s string, n int) ([]token, bool) {
	l := lexer{s: s}
	var out []token
	for n < 0 || len(out) < n {
		t := l.next()
		if t.kind == tokEOF {
			return out, true
		}
		out = append(out, t)
	}
	return out, false
}
