package verify

import (
	"strings"

	"github.com/pristinedb/pristine/internal/quote"
)

// canon rewrites one side's text into the source's names: a schema name
// quoted and followed by a dot (`app_2`.`t`, ON `app_2`.*) becomes the
// source schema it copies. On the target, a reference that names a source
// schema the target did not map to itself (a view in app_2 that still reads
// `app`.`t`) is marked, so it differs from the source's own reference.
type canon struct {
	names   map[string]string // this side's schema -> the source's
	foreign map[string]bool   // source schemas this side holds under another name
}

func newCanon(pairs []Pair, target bool) canon {
	c := canon{names: map[string]string{}, foreign: map[string]bool{}}
	for _, p := range pairs {
		if target {
			c.names[p.Target] = p.Source
		} else {
			c.names[p.Source] = p.Source
		}
	}
	if target {
		for _, p := range pairs {
			if _, own := c.names[p.Source]; !own {
				c.foreign[p.Source] = true
			}
		}
	}
	return c
}

// schema maps a schema name of this side to the source's.
func (c canon) schema(s string) string {
	if n, ok := c.names[s]; ok {
		return n
	}
	return s
}

// text maps the schema qualifiers in a definition.
func (c canon) text(s string) string {
	if !strings.Contains(s, "`") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '`' {
			b.WriteByte(s[i])
			i++
			continue
		}
		name, end := readQuoted(s, i)
		if end < len(s) && s[end] == '.' {
			if n, ok := c.names[name]; ok {
				b.WriteString(quote.Ident(n))
				i = end
				continue
			}
			if c.foreign[name] {
				b.WriteString(quote.Ident(name) + "/*the source's schema, not the copy's*/")
				i = end
				continue
			}
		}
		b.WriteString(s[i:end])
		i = end
	}
	return b.String()
}

// readQuoted reads the backtick-quoted identifier that starts at s[i] and
// returns its name and the index just past its closing backtick.
func readQuoted(s string, i int) (string, int) {
	var name strings.Builder
	j := i + 1
	for j < len(s) {
		if s[j] == '`' {
			if j+1 < len(s) && s[j+1] == '`' {
				name.WriteByte('`')
				j += 2
				continue
			}
			return name.String(), j + 1
		}
		name.WriteByte(s[j])
		j++
	}
	return name.String(), len(s)
}
