package template

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// ErrBuilding is returned (wrapped) by Begin when another builder holds the
// template's lock: wait for it, then look the template up again.
var ErrBuilding = errors.New("template is being built by someone else")

// Session is a build a client drives itself: pristine starts the template
// server and hands out its connection; the client runs its migrations and
// fixtures against it, then calls Finish (or Abort).
type Session struct {
	Meta  *catalog.Meta
	Inst  *mariadb.Instance
	b     *Builder
	opt   BuildOptions
	dir   string
	db    *sql.DB
	start time.Time
	tl    *Timeline
	done  func()
}

// Begin starts a build session for opt (Name, Key, Database, DBsPerSlot,
// Profile). When the template exists already it returns it and no session;
// when another builder holds it, ErrBuilding.
// It is Plan, then Plan.Begin.
func (b *Builder) Begin(ctx context.Context, opt BuildOptions) (*Session, *catalog.Meta, error) {
	p, err := b.Plan(ctx, opt)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	return p.Begin(ctx)
}

// begin is Plan.Begin: a session for opt under its key hash.
func (b *Builder) begin(ctx context.Context, opt BuildOptions, hash string) (*Session, *catalog.Meta, error) {
	tl := timelineOf(ctx)
	if tl == nil {
		tl = NewTimeline()
		ctx = WithTimeline(ctx, tl)
	}
	if m, err := b.cat.Load(hash); err == nil && catalog.CheckSecured(m) == nil {
		return nil, m, nil
	}
	unlock, err := b.cat.TryLock(hash)
	if err != nil {
		return nil, nil, err
	}
	if unlock == nil {
		return nil, nil, fmt.Errorf("%w: %s (%s)", ErrBuilding, opt.Name, hash[:12])
	}
	if m, err := b.cat.Load(hash); err == nil {
		if catalog.CheckSecured(m) == nil {
			unlock()
			return nil, m, nil
		}
		// A template of an older pristine is built again.
		if err := b.cat.RemoveLocked(m); err != nil {
			unlock()
			return nil, nil, err
		}
	}
	dir, err := b.cat.Stage(hash)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	tl.Mark(PhaseStage)
	m := b.newMeta(opt, hash)
	in, db, err := b.startBuild(ctx, dir, opt, m)
	if err != nil {
		_ = b.discard(dir)
		unlock()
		return nil, nil, fmt.Errorf("template build %s: %w", opt.Name, err)
	}
	return &Session{Meta: m, Inst: in, b: b, opt: opt, dir: dir, db: db, start: time.Now(), tl: tl, done: unlock}, nil, nil
}

// Hash is the hash the session's template will have.
func (ss *Session) Hash() string { return ss.Meta.Hash }

// Env is the environment that hands the template server to a program.
func (ss *Session) Env() []string {
	return dsn.Env(ss.Inst.Config.Port, ss.Inst.Config.Socket(), ss.Meta.User, ss.Meta.Password, ss.opt.database())
}

// Timeline is where the session's time went so far: pristine's own steps
// around the client's build (PhaseClient).
func (ss *Session) Timeline() *Timeline { return ss.tl }

// Finish stops the template server cleanly and publishes the template.
func (ss *Session) Finish(ctx context.Context) (*catalog.Meta, error) {
	defer ss.done()
	ss.tl.Mark(PhaseClient)
	ctx = WithTimeline(ctx, ss.tl)
	err := ss.b.finishBuild(ctx, ss.Inst, ss.db, ss.opt, ss.Meta)
	if err == nil {
		err = ss.b.settle(ss.dir)
		ss.tl.Mark(PhaseFile)
	}
	if err == nil {
		err = ss.b.publish(ss.dir, ss.Meta, ss.start)
		ss.tl.Mark(PhasePublish)
	}
	if err != nil {
		ss.Inst.Kill()
		_ = ss.b.seal(ss.Inst.Config.Datadir)
		_ = ss.b.discard(ss.dir)
		return nil, fmt.Errorf("template build %s: %w", ss.Meta.Name, err)
	}
	return ss.Meta, nil
}

// Abort throws the build away.
func (ss *Session) Abort() {
	defer ss.done()
	ss.db.Close()
	ss.Inst.Kill()
	os.RemoveAll(ss.Inst.Config.RunDir)
	_ = ss.b.seal(ss.Inst.Config.Datadir)
	_ = ss.b.discard(ss.dir)
}
