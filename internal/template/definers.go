package template

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

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

// killOthers kills every client connection but c's: not by user, since a
// session inside a root-definer routine shows as root.
func killOthers(ctx context.Context, c *sql.Conn) error {
	var self int64
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&self); err != nil {
		return fmt.Errorf("secure definers: %w", err)
	}
	rows, err := c.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> ? AND COMMAND NOT IN ('Daemon', 'Binlog Dump') AND USER NOT IN ('system user', 'event_scheduler')", self)
	if err != nil {
		return fmt.Errorf("secure definers: list connections: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		_, _ = c.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)) // one that ended meanwhile is no error
	}
	// A statement in flight finishes before its connection goes: wait, so
	// nothing it makes escapes the pass that follows.
	for i := 0; len(ids) > 0; i++ {
		if i == 2000 {
			return fmt.Errorf("secure definers: %d killed connections did not end within 10s: stop the client of the build", len(ids))
		}
		var left []int64
		for _, id := range ids {
			var n int
			if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
				return fmt.Errorf("secure definers: list connections: %w", err)
			}
			if n > 0 {
				left = append(left, id)
			}
		}
		ids = left
		if len(ids) > 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}
