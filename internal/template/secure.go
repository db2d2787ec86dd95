package template

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
)

// secureOn secures the accounts of the data directory in serves (see
// mariadb.SecureAccounts) and locks the build account a template from
// elsewhere may carry. in must be private: started with --skip-networking.
func (b *Builder) secureOn(ctx context.Context, in *mariadb.Instance, grantTablesSkipped bool) error {
	db, err := in.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := mariadb.SecureAccounts(ctx, db, b.cat.Admin(), grantTablesSkipped); err != nil {
		return err
	}
	return mariadb.LockAccount(ctx, db, "pristine", "%")
}

// secure gives a data directory that came from outside this root (a
// physical copy, an imported archive) to the servers' account and secures
// its accounts on a private server started without grant tables (pristine
// does not know the passwords in it), then stops it cleanly with a slow
// shutdown, as a build does.
//
// When m is not nil (an import), the DEFINERs are secured too
// (secureDefiners) for m's databases; a capture does that at the end of
// its build.
func (b *Builder) secure(ctx context.Context, data string, p mariadb.Profile, m *catalog.Meta) error {
	return b.secureWith(ctx, data, p, m, nil)
}

// secureWith is secure with one more step on the private server, run as
// root after the accounts are secured and before the DEFINER pass (a
// fork's: fork.go); nil for none.
func (b *Builder) secureWith(ctx context.Context, data string, p mariadb.Profile, m *catalog.Meta, step func(context.Context, *sql.DB) error) error {
	// The data's own server id (claimed here, or by the build that goes
	// on to start on it); the caller seals data when done.
	id, err := b.claim(data)
	if err != nil {
		return err
	}
	if err := id.OwnTree(data); err != nil {
		return err
	}
	runDir := filepath.Join(b.cat.Root().Path, "run", "secure-"+mariadb.RandomSecret()[:12])
	defer os.RemoveAll(runDir)
	in, err := mariadb.Start(b.bin, mariadb.Config{Datadir: data, RunDir: runDir, Profile: p,
		Extra: []string{"--skip-grant-tables", "--skip-networking"}, Account: &id.Account})
	if err != nil {
		return fmt.Errorf("secure accounts: %w", err)
	}
	defer in.Kill()
	if err := in.WaitReady(ctx); err != nil {
		return fmt.Errorf("secure accounts: %w", err)
	}
	tl := timelineOf(ctx)
	tl.Mark(PhaseStart)
	if err := b.secureOn(ctx, in, true); err != nil {
		return err
	}
	tl.Mark(PhaseSecure)
	in.Config.AdminPassword = b.cat.Admin() // the grant tables are loaded now
	db, err := in.Open("")
	if err != nil {
		return err
	}
	if step != nil {
		if err := step(ctx, db); err != nil {
			db.Close()
			return err
		}
		tl.Mark(PhaseSecure)
	}
	if m != nil {
		if err := b.secureDefiners(ctx, db, m); err != nil {
			db.Close()
			return err
		}
		tl.Mark(PhaseDefiners)
	}
	_, err = db.ExecContext(ctx, "SET GLOBAL innodb_fast_shutdown=0")
	db.Close()
	if err != nil {
		return fmt.Errorf("secure accounts: prepare shutdown: %w", err)
	}
	if err := in.Stop(ctx, 10*time.Minute); err != nil {
		return err
	}
	tl.Mark(PhaseStop)
	return nil
}

// setupAccount creates the schema (unless dbName is empty: a dump being
// loaded may create it with its own options) and the template's account.
func setupAccount(ctx context.Context, db *sql.DB, dbName string, m *catalog.Meta) error {
	qs := []string{
		"CREATE USER IF NOT EXISTS 'pristine'@'%'",
		// A captured copy of a pristine server may hold the account already.
		"ALTER USER 'pristine'@'%' IDENTIFIED BY " + quote.String(m.Password) + " ACCOUNT UNLOCK",
		"GRANT ALL PRIVILEGES ON *.* TO 'pristine'@'%' WITH GRANT OPTION",
	}
	if dbName != "" {
		qs = append([]string{"CREATE DATABASE IF NOT EXISTS " + quote.Ident(dbName)}, qs...)
	}
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("set up template account: %w", err)
		}
	}
	return nil
}
