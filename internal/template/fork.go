package template

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// A fork is a template made from a lease's current state (`pristine
// lease fork`, docs/architecture.md, "Fork"). The pool places a
// crash-consistent copy of the slot's data directory (a snapshot of the
// running server's clone) in the fork's build directory; the builder then
// runs a private server on it, which recovers the committed
// transactions, and finishes it as every template from outside is
// finished (secure: accounts secured, DEFINERs re-owned or reduced, a
// slow clean shutdown), since the data came from test code. The lease
// and its connections go on.

// ForkOptions say what a fork is called and how it is found again.
type ForkOptions struct {
	// Name is the new template's name.
	Name string
	// Key, when set, files the fork under catalog.ForkKey(parent, Key):
	// a later fork of the same parent with the same key returns it at
	// once. Empty: a new template under a random hash, named only.
	Key string
	// Group is the runner group the fork is filed for ("" for the
	// operator); the caller scopes Key by it (catalog.GroupKey).
	Group string
	// Lease names the lease forked, for the template's inputs.
	Lease string
}

// leaseAccounts matches the accounts a pool makes for its leases
// (pool.newAccount: lease_ and 12 hex digits, at any host). A fork
// carries the forking lease's: its holder knows the password.
const leaseAccounts = `User LIKE 'lease\_%' AND Host = '%'`

// forkHash is the hash a fork of parent made with key is filed under;
// "" for a fork without a key.
func forkHash(parent *catalog.Meta, key string) string {
	if key == "" {
		return ""
	}
	return catalog.ForkKey(parent.Hash, key)
}

// Fork makes template opt.Name from a running lease of parent: snapshot
// places a crash-consistent copy of the lease's data directory at the
// path it is given (which does not exist yet). With opt.Key, a fork
// filed under that key already is returned (built false) without a
// snapshot. A failed fork leaves nothing behind.
func (b *Builder) Fork(ctx context.Context, parent *catalog.Meta, opt ForkOptions, snapshot func(dst string) error) (*catalog.Meta, bool, error) {
	if err := catalog.ValidName(opt.Name); err != nil {
		return nil, false, err
	}
	if err := parent.CheckServer(b.bin.Version); err != nil {
		return nil, false, err
	}
	hash := forkHash(parent, opt.Key)
	if hash == "" {
		hash = randomHash()
	} else if m, err := b.cat.Load(hash); err == nil && catalog.CheckSecured(m) == nil {
		return m, false, nil
	}
	unlock, err := b.cat.Lock(hash)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if m, err := b.cat.Load(hash); err == nil {
		if catalog.CheckSecured(m) == nil {
			return m, false, nil // forked meanwhile by another caller
		}
		if err := b.cat.RemoveLocked(m); err != nil {
			return nil, false, err
		}
	}
	start := time.Now()
	dir, err := b.cat.Stage(hash)
	if err != nil {
		return nil, false, err
	}
	timelineOf(ctx).Mark(PhaseStage)
	m := forkMeta(parent, opt, hash)
	if err := b.forkData(ctx, dir, parent, m, snapshot); err != nil {
		if rmErr := b.discard(dir); rmErr != nil {
			err = fmt.Errorf("%w (and cleaning up: %v)", err, rmErr)
		}
		b.cat.RemoveLock(hash)
		return nil, false, fmt.Errorf("fork %s of %s: %w", opt.Name, parent.Name, err)
	}
	if err := b.publish(dir, m, start); err != nil {
		_ = b.discard(dir)
		b.cat.RemoveLock(hash)
		return nil, false, err
	}
	timelineOf(ctx).Mark(PhasePublish)
	return m, true, nil
}

// forkData takes the snapshot into dir/data and finishes it as a
// template: recovered, secured, stopped cleanly, sealed.
func (b *Builder) forkData(ctx context.Context, dir string, parent, m *catalog.Meta, snapshot func(string) error) error {
	tl := timelineOf(ctx)
	data := filepath.Join(dir, "data")
	if err := snapshot(data); err != nil {
		return err
	}
	tl.Mark(PhaseSnapshot)
	// The pool's id owned the snapshot; secure gives it to a server id
	// of its own, and seal to pristine's user.
	p := BuildProfileFor(parent)
	p.Options = append([]string(nil), parent.ServerOptions...)
	err := b.secureWith(ctx, data, p, m, func(ctx context.Context, db *sql.DB) error {
		if err := rollbackPrepared(ctx, db); err != nil {
			return err
		}
		return lockLeaseAccounts(ctx, db)
	})
	if serr := b.seal(data); err == nil {
		err = serr
	}
	if err == nil {
		err = b.bin.ForgetIdentity(data)
	}
	if err == nil {
		err = m.TakeLogSize(data)
	}
	if err != nil {
		return err
	}
	tl.Mark(PhaseSeal)
	m.Accounts = catalog.AccountsVersion
	return nil
}

// lockLeaseAccounts gives every lease account the fork carries a random
// password and locks it: the forking holder's credentials open no slot
// of the fork, while objects it made (DEFINER the lease account) still
// run, with the database privileges a lease has.
func lockLeaseAccounts(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT User FROM mysql.user WHERE "+leaseAccounts)
	if err != nil {
		return fmt.Errorf("lock lease accounts: %w", err)
	}
	var users []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			rows.Close()
			return fmt.Errorf("lock lease accounts: %w", err)
		}
		users = append(users, u)
	}
	rows.Close()
	for _, u := range users {
		if err := mariadb.LockAccount(ctx, db, u, "%"); err != nil {
			return err
		}
	}
	return nil
}

// rollbackPrepared rolls back the XA transactions the lease left
// prepared: recovery keeps them, with their row locks, in every slot of
// the fork otherwise. Like every transaction not committed when the fork
// started, they are not in it.
func rollbackPrepared(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return fmt.Errorf("list prepared XA transactions: %w", err)
	}
	var qs []string
	for rows.Next() {
		var format, glen, blen int
		var data []byte
		if err := rows.Scan(&format, &glen, &blen, &data); err != nil {
			rows.Close()
			return fmt.Errorf("list prepared XA transactions: %w", err)
		}
		if glen < 0 || blen < 0 || glen+blen > len(data) {
			continue
		}
		qs = append(qs, fmt.Sprintf("XA ROLLBACK X'%x', X'%x', %d", data[:glen], data[glen:glen+blen], format))
	}
	rows.Close()
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("roll back a prepared XA transaction: %w", err)
		}
	}
	return nil
}

// forkMeta is the record of a fork of parent: the parent's server,
// options and databases, a build account of its own (locked like every
// build's), and the lineage.
func forkMeta(parent *catalog.Meta, opt ForkOptions, hash string) *catalog.Meta {
	m := &catalog.Meta{Name: opt.Name, Hash: hash, Server: parent.Server, Flavor: parent.Flavor, Backend: parent.Backend,
		LogFileSize: parent.LogFileSize, ServerOptions: append([]string(nil), parent.ServerOptions...),
		Databases: append([]string(nil), parent.Databases...), User: "pristine", Password: mariadb.RandomSecret(),
		Group: opt.Group, Parent: parent.Hash, ParentName: parent.Name}
	if opt.Lease != "" {
		m.Inputs = []string{"fork of lease " + opt.Lease + " of " + parent.Name}
	}
	return m
}

// randomHash is the hash of a fork without a key: 64 random hex digits,
// which no build or other fork computes.
func randomHash() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
