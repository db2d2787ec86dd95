package mariadb

import "testing"

// TestProfileKeyInputs: the parts of a profile that change a data
// directory's bytes (redo log size, server options) change the key that
// feeds template hashes, so a template is built again; the rest (memory
// and connection sizes, commit laziness, which only a running server
// sees) do not, so it is not.
func TestProfileKeyInputs(t *testing.T) {
	base := DefaultProfile()
	for _, c := range []struct {
		name string
		edit func(p *Profile)
		same bool
	}{
		{"redo log size", func(p *Profile) { p.LogFileSize *= 2 }, false},
		{"a server option added", func(p *Profile) { p.Options = append(append([]string{}, p.Options...), "lower-case-table-names=1") }, false},
		{"a server option's value", func(p *Profile) { p.Options = []string{"character-set-server=latin1"} }, false},
		{"the stock options written out", func(p *Profile) { p.Options = (&Binary{Flavor: MariaDB, Major: 10, Minor: 11}).StockOptions() }, false},
		{"buffer pool", func(p *Profile) { p.BufferPool *= 2 }, true},
		{"max connections", func(p *Profile) { p.MaxConnections++ }, true},
		{"table cache", func(p *Profile) { p.TableCache++ }, true},
		{"key buffer", func(p *Profile) { p.KeyBuffer *= 2 }, true},
		{"aria cache", func(p *Profile) { p.AriaCache *= 2 }, true},
		{"lazy commit (builds)", func(p *Profile) { *p = BuildProfile(*p) }, true},
	} {
		p := base
		p.Options = append([]string{}, base.Options...)
		c.edit(&p)
		if got := p.Key() == base.Key(); got != c.same {
			t.Errorf("%s: key %q vs %q: same=%v, want %v", c.name, p.Key(), base.Key(), got, c.same)
		}
	}
}
