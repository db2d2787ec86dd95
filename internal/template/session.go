package template

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

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
	Meta  *Meta
	Inst  *mariadb.Instance
	store *Store
	opt   BuildOptions
	dir   string
	db    *sql.DB
	start time.Time
	done  func()
}

// Begin starts a build session for opt (Name, Key, Database, DBsPerSlot,
// Profile). When the template exists already it returns it and no session;
// when another builder holds it, ErrBuilding.
func (s *Store) Begin(ctx context.Context, opt BuildOptions) (*Session, *Meta, error) {
	if err := ValidName(opt.Name); err != nil {
		return nil, nil, err
	}
	if opt.DBsPerSlot < 1 {
		opt.DBsPerSlot = 1
	}
	hash, err := s.Hash(opt)
	if err != nil {
		return nil, nil, err
	}
	if m, err := s.loadMeta(hash); err == nil {
		return nil, m, nil
	}
	unlock, err := s.tryLock(hash)
	if err != nil {
		return nil, nil, err
	}
	if unlock == nil {
		return nil, nil, fmt.Errorf("%w: %s (%s)", ErrBuilding, opt.Name, hash[:12])
	}
	if m, err := s.loadMeta(hash); err == nil {
		unlock()
		return nil, m, nil
	}
	dir, err := s.newBuildDir(hash)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	m := s.newMeta(opt, hash)
	in, db, err := s.startBuild(ctx, dir, opt, m)
	if err != nil {
		_ = s.removeDir(dir)
		unlock()
		return nil, nil, fmt.Errorf("template build %s: %w", opt.Name, err)
	}
	return &Session{Meta: m, Inst: in, store: s, opt: opt, dir: dir, db: db, start: time.Now(), done: unlock}, nil, nil
}

// Hash is the hash the session's template will have.
func (ss *Session) Hash() string { return ss.Meta.Hash }

// Env is the environment that hands the template server to a program.
func (ss *Session) Env() []string {
	return dsn.Env(ss.Inst.Config.Port, ss.Inst.Config.Socket(), ss.Meta.User, ss.Meta.Password, ss.opt.database())
}

// Finish stops the template server cleanly and publishes the template.
func (ss *Session) Finish(ctx context.Context) (*Meta, error) {
	defer ss.done()
	err := ss.store.finishBuild(ctx, ss.Inst, ss.db, ss.opt, ss.Meta)
	if err == nil {
		err = ss.store.publish(ss.dir, ss.Meta, ss.start)
	}
	if err != nil {
		ss.Inst.Kill()
		_ = ss.store.removeDir(ss.dir)
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
	_ = ss.store.removeDir(ss.dir)
}
