package pool

import (
	"context"
	"database/sql"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// The pool's seam: what it does to servers and to a slot's files goes
// through ops and server, so the slot state machine can be driven by fakes
// in unit tests (as IntegreSQL's pool takes its "recreate" and "remove"
// functions). Up fills ops with the real operations, which drive mariadbd
// and the copy-on-write backend.

// ops are the pool's operations that touch a server or the disk. They run
// without p.mu.
type ops struct {
	// clone throws away the slot's clone and clones the template afresh,
	// setting s.clone (Pool.cloneSlot).
	clone func(ctx context.Context, s *slot) error
	// boot starts a server on the slot's clone, waits until it answers
	// and makes each unit's account (Pool.bootServer). A unit whose lease
	// is restored (s.restore) keeps the lease's account when the clone
	// still has it.
	boot func(ctx context.Context, s *slot) (*booted, error)
	// diskUsed adds up the bytes allocated under dir (usedBlocks).
	diskUsed func(dir string) int64
	// claimIDs claims the server ids of slots that have none, in one
	// pass (Pool.claimIDs); nil claims none ahead (each slot's clone
	// claims its own).
	claimIDs func(slots []*slot)
}

// server is a slot's running mariadbd, with the pool's admin connection to
// it (root over the unix socket, never handed out).
type server interface {
	Running() bool
	PID() int
	Socket() string
	// Done is closed when the server has exited.
	Done() <-chan struct{}
	// exitReason says why the server exited, as a Reason* label and a
	// sentence.
	exitReason() (label, detail string)
	// kill closes the admin connection, then kills the server.
	kill()
	// recycle is release --unchanged's check (Pool.recycle).
	recycle(ctx context.Context, was check, a account, dirs []string) (account, check, error)
	// freeze makes the server read-only and stops every client's
	// running statement (a slot over its disk cap); the error says the
	// server did not take read_only.
	freeze(ctx context.Context) error
	// stopSessions kills every client connection but the admin's (a
	// frozen slot that still grows: temporary tables, which read_only
	// does not stop, die with their connection).
	stopSessions(ctx context.Context) error
}

// booted is what a slot's new server came up with.
type booted struct {
	srv   server
	port  int      // the TCP port it listens on
	mark  string   // its write counters and global variables
	files fileMark // the slot's files
	base  int64    // the clone's blocks, when slots are capped
	// accts are the units' accounts, in the slot's order; restored[i]
	// is true when unit i's restored lease kept its account.
	accts    []account
	restored []bool
	inplace  *inplaceBase // the in-place reset's baseline (inplace.go)
}

// liveServer is a server of mariadb.Instance.
type liveServer struct {
	*mariadb.Instance
	admin   *sql.DB
	globals *serverGlobals
	purge   *purgeWaker
}

var _ server = (*liveServer)(nil)

func (l *liveServer) Socket() string { return l.Config.Socket() }

// warmLogins logs in once as each account about to be handed out, so that
// its holder's first login is checked against the server's cache where
// the server keeps one (mariadb.Instance.WarmLogin: MySQL). Best effort: a
// login that fails here costs the holder only the slower first login.
func (l *liveServer) warmLogins(ctx context.Context, accts ...account) {
	for _, a := range accts {
		if a.ok() {
			_ = l.WarmLogin(ctx, a.user, a.password)
		}
	}
}

func (l *liveServer) exitReason() (string, string) { return exitReason(l.Instance) }

// kill closes the admin connection before the server goes, so no pooled
// connection is left to break (and a read of the global variables waiting
// for one gives up), then its prepared query.
func (l *liveServer) kill() {
	l.admin.Close()
	l.purge.close()
	l.Kill()
	l.globals.close()
}

func (l *liveServer) recycle(ctx context.Context, was check, a account, dirs []string) (account, check, error) {
	fresh, now, err := recycle(ctx, l.admin, l.globals, l.Binary.Flavor, was, a, dirs, l.purge.spared())
	if err == nil {
		l.warmLogins(ctx, fresh)
	}
	return fresh, now, err
}

func (l *liveServer) freeze(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := l.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// read_only first, so no new statement starts between the two.
	_, err = conn.ExecContext(ctx, "SET GLOBAL read_only = ON")
	// By connection id, not user: a session inside a routine of another
	// definer shows that definer as its user.
	_ = mariadb.KillOtherQueries(ctx, conn)
	return err
}

func (l *liveServer) stopSessions(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := l.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return killOthers(ctx, conn, l.purge.spared()...)
}
