// Package verify proves that a copy of a database is the database it was
// copied from: it reads both servers' schemas object by object (databases,
// tables with every column, index, constraint and partition, views,
// triggers, routines, events, sequences, users, roles and grants), reads
// every table's rows by checksum, and lists each difference.
//
// Definitions are compared as the server prints them (SHOW CREATE ...), cut
// into their parts so a difference names the column or index that differs.
// A copy may live under another schema name (K databases per slot: app_2 is
// a copy of app): schema names are mapped to the source's before comparing,
// and a reference in the copy that still names the source's schema is shown
// as such, never mistaken for the copy's own. docs/fidelity.md has the rules.
package verify

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Pair names a schema on the source and the schema that copies it on the
// target.
type Pair struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// Side is one server to compare, with the schemas to read on it.
type Side struct {
	DB    *sql.DB
	Label string // for messages: a DSN without its password, a lease, a template
}

// Options tune Compare.
type Options struct {
	// Pairs are the schemas to compare; see ResolvePairs.
	Pairs []Pair
	// IgnoreUsers lists accounts left out of the comparison, as user@host
	// patterns with * and ? wildcards, besides the system accounts
	// (capture.SystemAccount: root@*, anonymous ''@*, mariadb.sys, mysql,
	// PUBLIC) and pristine's (pristine@%, lease_*@%).
	IgnoreUsers []string
	// AllUsers compares every account but those left out above, with all
	// their grants, instead of the accounts in scope of the compared
	// schemas (capture.AccountScope, the rule every capture follows).
	AllUsers bool
	// Passwords compares the accounts' authentication (the IDENTIFIED
	// clause: password hash, plugins), which a capture carries only when
	// built with --with-passwords.
	Passwords bool
	// SkipData leaves row checksums out.
	SkipData bool
	// SkipUsers leaves users, roles and grants out.
	SkipUsers bool
	// Workers is the number of connections per side that checksum tables
	// (default 2).
	Workers int
}

// Change says how an object or one of its parts differs.
type Change string

// The changes a Diff reports.
const (
	Missing Change = "missing" // in the source, not in the target
	Extra   Change = "extra"   // in the target, not in the source
	Differs Change = "differs" // in both, not the same
)

// Diff is one difference between source and target.
type Diff struct {
	Kind   string `json:"kind"`             // database, table, view, trigger, procedure, function, event, sequence, user, role
	Object string `json:"object"`           // its name, with the source's schema name
	Part   string `json:"part,omitempty"`   // the part that differs (column `x`, index `y`, rows...); empty: the whole object
	Change Change `json:"change"`           // missing, extra or differs
	Source string `json:"source,omitempty"` // the source's text of the part
	Target string `json:"target,omitempty"` // the target's text, with schema names mapped
}

// Report is the outcome of Compare.
type Report struct {
	Source  string         `json:"source"`
	Target  string         `json:"target"`
	Pairs   []Pair         `json:"schemas"`
	Objects map[string]int `json:"objects"` // objects compared, by kind
	Diffs   []Diff         `json:"differences"`
	// Known are differences pristine makes on purpose (re-owned DEFINERs,
	// DEFINERs without global privileges: see known.go); they do not make
	// the report unclean.
	Known   []Diff   `json:"known_differences,omitempty"`
	Notes   []string `json:"notes,omitempty"` // what could not be compared, and why
	Seconds float64  `json:"seconds"`
}

// Clean reports whether the target is the source, object for object.
func (r *Report) Clean() bool { return len(r.Diffs) == 0 }

// Compare reads the paired schemas on both servers at once and returns every
// difference. An error means the comparison itself failed (a server did not
// answer); differences are in the report.
func Compare(ctx context.Context, src, dst Side, opt Options) (*Report, error) {
	start := time.Now()
	opt, err := checkOptions(opt)
	if err != nil {
		return nil, err
	}
	var (
		wg         sync.WaitGroup
		a, b       *snapshot
		errA, errB error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		a, errA = read(ctx, src.DB, sourceSchemas(opt.Pairs), newCanon(opt.Pairs, false), opt)
	}()
	go func() {
		defer wg.Done()
		b, errB = read(ctx, dst.DB, targetSchemas(opt.Pairs), newCanon(opt.Pairs, true), opt)
	}()
	wg.Wait()
	if errA != nil {
		return nil, fmt.Errorf("verify: read source %s: %w", src.Label, errA)
	}
	if errB != nil {
		return nil, fmt.Errorf("verify: read target %s: %w", dst.Label, errB)
	}
	return report(src, dst, a, b, opt, start), nil
}

// Source is the source side of comparisons read once (ReadSource), for
// comparing many targets with a source that does not change, such as a
// lease kept untouched.
type Source struct {
	side Side
	opt  Options
	snap *snapshot
}

// ReadSource reads the source schemas of opt.Pairs on src.
func ReadSource(ctx context.Context, src Side, opt Options) (*Source, error) {
	opt, err := checkOptions(opt)
	if err != nil {
		return nil, err
	}
	a, err := read(ctx, src.DB, sourceSchemas(opt.Pairs), newCanon(opt.Pairs, false), opt)
	if err != nil {
		return nil, fmt.Errorf("verify: read source %s: %w", src.Label, err)
	}
	return &Source{side: src, opt: opt, snap: a}, nil
}

// Compare reads dst's schemas, paired with the source's by pairs (whose
// sources must be the ones read), and returns every difference, as the
// package's Compare does.
func (s *Source) Compare(ctx context.Context, dst Side, pairs []Pair) (*Report, error) {
	start := time.Now()
	if !slices.Equal(sourceSchemas(pairs), sourceSchemas(s.opt.Pairs)) {
		return nil, fmt.Errorf("verify: the pairs' sources %v are not the ones read (%v)", sourceSchemas(pairs), sourceSchemas(s.opt.Pairs))
	}
	opt := s.opt
	opt.Pairs = pairs
	b, err := read(ctx, dst.DB, targetSchemas(pairs), newCanon(pairs, true), opt)
	if err != nil {
		return nil, fmt.Errorf("verify: read target %s: %w", dst.Label, err)
	}
	return report(s.side, dst, s.snap, b, opt, start), nil
}

// checkOptions refuses options without pairs and fills in the defaults.
func checkOptions(opt Options) (Options, error) {
	if len(opt.Pairs) == 0 {
		return opt, fmt.Errorf("verify: no schemas to compare")
	}
	if opt.Workers <= 0 {
		opt.Workers = 2
	}
	return opt, nil
}

// report compares two snapshots read since start.
func report(src, dst Side, a, b *snapshot, opt Options, start time.Time) *Report {
	r := &Report{Source: src.Label, Target: dst.Label, Pairs: opt.Pairs, Objects: map[string]int{}}
	r.Notes = append(r.Notes, a.notes...)
	for _, n := range b.notes {
		r.Notes = append(r.Notes, "target: "+n)
	}
	r.Diffs, r.Known = splitKnown(diff(a, b, r.Objects))
	r.Seconds = time.Since(start).Seconds()
	return r
}

func sourceSchemas(ps []Pair) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Source
	}
	return out
}

func targetSchemas(ps []Pair) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Target
	}
	return out
}

// kindOrder sorts differences the way a person reads a schema.
var kindOrder = map[string]int{"database": 0, "table": 1, "sequence": 2, "view": 3, "trigger": 4,
	"procedure": 5, "function": 6, "package": 7, "package body": 8, "event": 9, "role": 10, "user": 11}

// diff compares two snapshots part by part and counts the objects compared.
func diff(a, b *snapshot, counts map[string]int) []Diff {
	keys := map[objKey]bool{}
	for k := range a.objs {
		keys[k] = true
	}
	for k := range b.objs {
		keys[k] = true
	}
	sorted := make([]objKey, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		x, y := sorted[i], sorted[j]
		if kindOrder[x.kind] != kindOrder[y.kind] {
			return kindOrder[x.kind] < kindOrder[y.kind]
		}
		return x.name < y.name
	})
	var out []Diff
	for _, k := range sorted {
		oa, ob := a.objs[k], b.objs[k]
		counts[k.kind]++
		switch {
		case ob == nil:
			out = append(out, Diff{Kind: k.kind, Object: k.name, Change: Missing, Source: oa.summary()})
		case oa == nil:
			out = append(out, Diff{Kind: k.kind, Object: k.name, Change: Extra, Target: ob.summary()})
		default:
			out = append(out, diffParts(k, oa, ob)...)
		}
	}
	return out
}

func diffParts(k objKey, a, b *object) []Diff {
	var out []Diff
	for _, p := range a.order {
		va, okA := a.parts[p]
		vb, okB := b.parts[p]
		switch {
		case !okB:
			out = append(out, Diff{Kind: k.kind, Object: k.name, Part: p, Change: Missing, Source: va})
		case va != vb:
			out = append(out, Diff{Kind: k.kind, Object: k.name, Part: p, Change: Differs, Source: va, Target: vb})
		}
		_ = okA
	}
	for _, p := range b.order {
		if _, ok := a.parts[p]; !ok {
			out = append(out, Diff{Kind: k.kind, Object: k.name, Part: p, Change: Extra, Target: b.parts[p]})
		}
	}
	return out
}

// objKey names an object by kind and canonical (source) name.
type objKey struct{ kind, name string }

// object is one object's parts, in the order the server prints them.
type object struct {
	order []string
	parts map[string]string
}

func newObject() *object { return &object{parts: map[string]string{}} }

func (o *object) set(part, value string) {
	if _, ok := o.parts[part]; !ok {
		o.order = append(o.order, part)
	}
	o.parts[part] = value
}

// summary is the object's main definition, for a missing or extra object.
func (o *object) summary() string {
	for _, p := range o.order {
		if strings.HasPrefix(p, "create ") || p == "sql original statement" {
			return abbrev(o.parts[p], 200)
		}
	}
	if len(o.order) > 0 {
		return abbrev(o.order[0]+": "+o.parts[o.order[0]], 200)
	}
	return ""
}

func abbrev(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
