package quote

import "testing"

func TestQuote(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Ident("t"), "`t`"},
		{Ident("a`b"), "`a``b`"},
		{Ident("a``"), "`a`````"},
		{Qualified("s`", "t"), "`s```.`t`"},
		{String("x"), "'x'"},
		{String(`it's`), `'it\'s'`},
		{String(`a\b`), `'a\\b'`},
		{String("\x00"), `'\0'`},
		{String(`\'`), `'\\\''`},
		{Account("u'", "%"), `'u\''@'%'`},
		{Shell("a b"), `'a b'`},
		{Shell("it's $HOME"), `'it'\''s $HOME'`},
		{Shell(""), `''`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
