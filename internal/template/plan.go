package template

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// Plan is one build with its content key computed: the one way into a
// build. `template build` (with or without a fleet cache), the fleet cache
// itself (oci.CachedBuild) and the daemon's build sessions all make a Plan
// with Builder.Plan and hand it on, so the key is computed once per build
// and never again. A capture from a live server is probed once, in Plan,
// with the caller's context; the capture reuses that probe (its databases,
// method and change marker) and its connections. Close releases them.
type Plan struct {
	// Opt are the build's options as the key covers them: defaults filled
	// in, a capture's default database chosen, SQL from stdin spooled to a
	// file.
	Opt BuildOptions
	// Hash is the content key (catalog.Key) the build is looked up under.
	// A capture whose source moved on between the probe and the snapshot
	// is filed under the key of the snapshot's position instead (see
	// Build): the template's Meta.Hash is the key it is filed under.
	Hash string

	b       *Builder
	live    *liveSource // the probed source of a capture, open until Close
	stdin   bool        // Opt.FromSQL is standard input, spooled
	cleanup func()      // removes the spooled stdin
}

// Plan validates opt, reads standard input to a file when opt.FromSQL is
// "-", probes a live source (opt.Server) and computes the content key. The
// caller Closes the plan when the build is done.
func (b *Builder) Plan(ctx context.Context, opt BuildOptions) (*Plan, error) {
	if err := catalog.ValidName(opt.Name); err != nil {
		return nil, err
	}
	// The options become the template's (its meta.json, its exports):
	// only those a template may carry, whoever asks for the build.
	if err := mariadb.CheckTemplateOptions(opt.Profile.Options); err != nil {
		return nil, fmt.Errorf("template build %s: %w: build the template without it", opt.Name, err)
	}
	if opt.DBsPerSlot < 1 {
		opt.DBsPerSlot = 1
	}
	var spooled struct {
		stdin   bool
		cleanup func()
	}
	if opt.FromSQL == "-" {
		name, cleanup, err := b.spoolStdin()
		if err != nil {
			return nil, err
		}
		opt.FromSQL, spooled.stdin, spooled.cleanup = name, true, cleanup
	}
	p, err := b.key(ctx, opt)
	if err != nil {
		if spooled.cleanup != nil {
			spooled.cleanup()
		}
		return nil, err
	}
	p.stdin, p.cleanup = spooled.stdin, spooled.cleanup
	return p, nil
}

// key computes opt's content key, probing a live source with ctx (the
// source stays open in the plan).
func (b *Builder) key(ctx context.Context, opt BuildOptions) (*Plan, error) {
	p := &Plan{b: b}
	if opt.Server.DSN != "" {
		ls, err := b.openSource(ctx, &opt)
		if err != nil {
			return nil, err
		}
		opt.Profile.Options = b.bin.ServerOptions(opt.Profile.Options)
		p.live, p.Opt, p.Hash = ls, opt, b.hashLive(opt, ls)
		return p, nil
	}
	// The template records (and its key covers) the options its server
	// runs with: the stock server's of the installed version, with the
	// template's own over them.
	opt.Profile.Options = b.bin.ServerOptions(opt.Profile.Options)
	in := b.inputs(opt)
	in.FromSQL = opt.FromSQL
	hash, err := catalog.Key(in)
	if err != nil {
		return nil, err
	}
	p.Opt, p.Hash = opt, hash
	return p, nil
}

// Builder is the builder the plan builds with.
func (p *Plan) Builder() *Builder { return p.b }

// FromStdin reports whether the plan's SQL came from standard input.
func (p *Plan) FromStdin() bool { return p.stdin }

// Close closes the live source's connections and removes spooled input.
// It may be called more than once.
func (p *Plan) Close() {
	if p.live != nil {
		p.live.src.Close()
		p.live = nil
	}
	if p.cleanup != nil {
		p.cleanup()
		p.cleanup = nil
	}
}

// Build makes the template the plan describes, or returns the one already
// built under its key (built is then false). See Builder.Build.
func (p *Plan) Build(ctx context.Context) (*catalog.Meta, bool, error) {
	if err := p.Opt.somethingToBuild(); err != nil {
		return nil, false, err
	}
	if p.Opt.Server.DSN != "" && p.live == nil {
		return nil, false, errors.New("template build: the plan's source is closed: make a new plan")
	}
	return p.b.build(ctx, p)
}

// Begin starts a build session for the plan (see Builder.Begin).
func (p *Plan) Begin(ctx context.Context) (*Session, *catalog.Meta, error) {
	if p.live != nil {
		return nil, nil, errors.New("template build: a build session cannot capture a live server: build it with template build --from-server")
	}
	return p.b.begin(ctx, p.Opt, p.Hash)
}

// Hash computes the content key of a build without building it (see
// catalog.Key). Input from stdin must have been spooled to a file first; a
// capture from a live server connects to it with ctx to read its identity
// and change marker. A build computes its key once, in Plan: Hash is for
// callers that only want the key (`template key`).
func (b *Builder) Hash(ctx context.Context, opt BuildOptions) (string, error) {
	p, err := b.key(ctx, opt)
	if err != nil {
		return "", err
	}
	p.Close()
	return p.Hash, nil
}

// sameGTID reports whether two GTID positions (@@gtid_binlog_pos, or
// mariadb-backup's "GTID of the last change") name the same state: the
// same domain-server-sequence triples in any order.
func sameGTID(a, b string) bool {
	split := func(s string) []string {
		f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
		slices.Sort(f)
		return f
	}
	return slices.Equal(split(a), split(b))
}

// rekey files a capture under the key of the position its snapshot holds
// when the source moved on after the probe: a template must never be
// filed under an older position than the data it holds (a build of the
// source at the snapshot's position then finds it). m.Hash and m's inputs
// change; the caller publishes under m.Hash.
func (b *Builder) rekey(opt BuildOptions, ls *liveSource, snapshot string, m *catalog.Meta) {
	if ls.src.GTID == "" || snapshot == "" || sameGTID(ls.src.GTID, snapshot) {
		return
	}
	b.progress("the source moved on from GTID %s to %s between the probe and the snapshot: the template is filed under %s, the position of the data it holds",
		ls.src.GTID, snapshot, snapshot)
	ls.marker = "gtid " + snapshot
	m.Hash = b.hashLive(opt, ls)
}

// errRekeyBusy says a re-keyed capture met another build of its new key.
func errRekeyBusy(name, hash string) error {
	return fmt.Errorf("template build %s: the source changed during the capture and another build of its new position (%s) is running: run the build again to use that one", name, hash[:12])
}
