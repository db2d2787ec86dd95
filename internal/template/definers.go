package template

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// secureDefiners is the build's last step on its server before the clean
// stop: the build account is locked and every other connection killed (an
// API build's client may still hold one, and could otherwise make a new
// object as root after the pass), then mariadb.SecureDefiners re-owns the
// administrative accounts' views, triggers, routines and events by the
// template's owner account and reduces the other DEFINERs, so no object
// of the template runs with more than a lease has (docs/security.md, "No
// definer gadget"). What changed is written to m.Definers.
func (b *Builder) secureDefiners(ctx context.Context, db *sql.DB, m *catalog.Meta) error {
	// The pool's idle connections would be killed below: close them now.
	db.SetMaxIdleConns(0)
	defer db.SetMaxIdleConns(2)
	c, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("secure definers: %w", err)
	}
	defer c.Close()
	if err := mariadb.LockAccount(ctx, db, m.User, "%"); err != nil {
		return err
	}
	if err := killOthers(ctx, c); err != nil {
		return err
	}
	rep, err := mariadb.SecureDefiners(ctx, c, m.Databases, len(m.Databases) > 1)
	if err != nil {
		return err
	}
	m.Definers = &catalog.Definers{Owner: mariadb.OwnerUser + "@" + mariadb.OwnerHost, Reowned: rep.Reowned, Reduced: rep.Reduced, Dropped: rep.Dropped}
	if n := len(rep.Reowned); n > 0 {
		b.progress("re-owned %d objects of administrative accounts by %s@%s (no object runs as root in a slot)", n, mariadb.OwnerUser, mariadb.OwnerHost)
	}
	if len(rep.Reduced) > 0 {
		b.progress("took global privileges and privileges on mysql from the DEFINERs %s", strings.Join(rep.Reduced, ", "))
	}
	if len(rep.Dropped) > 0 {
		w := "dropped views of administrative accounts that name missing tables or functions (a lease could put its own in their place and run as that account): " + strings.Join(rep.Dropped, ", ")
		m.Warnings = append(m.Warnings, w)
		b.progress("warning: %s", w)
	}
	return nil
}

// killRounds bounds the wait for the build's other connections to end:
// 2000 rounds, about 10 s. A build's client may be in the middle of a big
// statement, which ends before its connection goes.
const killRounds = 2000

// killOthers kills every client connection but c's (mariadb.KillOthers:
// by id, not by user, since a session inside a root-definer routine shows
// as root) and waits until they are gone, so nothing a statement in
// flight makes escapes the pass that follows.
func killOthers(ctx context.Context, c *sql.Conn) error {
	if err := mariadb.KillOthers(ctx, c, killRounds); err != nil {
		return fmt.Errorf("secure definers: %w: stop the client of the build", err)
	}
	return nil
}
