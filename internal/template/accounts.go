package template

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/svcuser"
)

// AccountsVersion marks data directories whose accounts were secured: root
// only at localhost with the root's admin secret, no anonymous account,
// the build account locked. Templates without it were made by an older
// pristine and are refused (ErrInsecure).
const AccountsVersion = "secured-1"

// ErrInsecure is wrapped by CheckSecured's error.
var ErrInsecure = errors.New("template made by an older pristine")

// CheckSecured refuses a template whose accounts were not secured: its
// root account has no password and its files may belong to root.
func CheckSecured(m *Meta) error {
	if m.Accounts == AccountsVersion {
		return nil
	}
	return fmt.Errorf("%w: template %s (%s) has a root account without a password: remove it (pristine template rm %s) and build or import it again", ErrInsecure, m.Name, shortHash(m.Hash), m.Hash)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// secureOn secures the accounts of the data directory in serves (see
// mariadb.SecureAccounts) and locks the build account a template from
// elsewhere may carry. in must be private: started with --skip-networking.
func (s *Store) secureOn(ctx context.Context, in *mariadb.Instance, grantTablesSkipped bool) error {
	db, err := in.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := mariadb.SecureAccounts(ctx, db, s.Admin, grantTablesSkipped); err != nil {
		return err
	}
	return mariadb.LockAccount(ctx, db, "pristine", "%")
}

// secure gives a data directory that came from outside this root (a
// physical copy, an imported archive) to the servers' account and secures
// its accounts on a private server started without grant tables (pristine
// does not know the passwords in it), then stops it cleanly with a slow
// shutdown, as a build does.
func (s *Store) secure(ctx context.Context, data string, p mariadb.Profile) error {
	acct, err := svcuser.Get()
	if err != nil {
		return err
	}
	if err := acct.OwnTree(data); err != nil {
		return err
	}
	runDir := filepath.Join(s.Root.Path, "run", "secure-"+mariadb.RandomSecret()[:12])
	defer os.RemoveAll(runDir)
	in, err := mariadb.Start(s.Bin, mariadb.Config{Datadir: data, RunDir: runDir, Profile: p,
		Extra: []string{"--skip-grant-tables", "--skip-networking"}})
	if err != nil {
		return fmt.Errorf("secure accounts: %w", err)
	}
	defer in.Kill()
	if err := in.WaitReady(ctx); err != nil {
		return fmt.Errorf("secure accounts: %w", err)
	}
	if err := s.secureOn(ctx, in, true); err != nil {
		return err
	}
	in.Config.AdminPassword = s.Admin // the grant tables are loaded now
	db, err := in.Open("")
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "SET GLOBAL innodb_fast_shutdown=0")
	db.Close()
	if err != nil {
		return fmt.Errorf("secure accounts: prepare shutdown: %w", err)
	}
	return in.Stop(ctx, 10*time.Minute)
}
