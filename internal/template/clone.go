package template

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
)

// cloneMySQL is a physical capture of a MySQL source (capture.Clone): a
// private recipient server on a copy of the base data directory, with the
// clone plugin loaded and no network listener, clones the source into a
// directory beside data, as data's own server account; the recipient is
// stopped and its directory removed, and the clone's files move into data
// (made by the caller, maybe a subvolume). The caller then starts the
// clone once and stops it cleanly (secure), as a mariadb-backup copy.
func (b *Builder) cloneMySQL(ctx context.Context, src *capture.Source, dir, data string, opt BuildOptions, copts capture.Options) (capture.CloneStats, error) {
	var st capture.CloneStats
	id, err := b.claim(data)
	if err != nil {
		return st, err
	}
	base, err := b.base(ctx, opt.Profile)
	if err != nil {
		return st, err
	}
	work := filepath.Join(dir, ".clone")
	if err := os.Mkdir(work, 0o700); err != nil {
		return st, fmt.Errorf("clone: %w", err)
	}
	defer os.RemoveAll(work)
	// The recipient's account writes the clone here.
	if err := id.Own(work, 0o700); err != nil {
		return st, fmt.Errorf("clone: %w", err)
	}
	recData := filepath.Join(work, "recipient")
	if err := cow.CopyTree(base, recData, ownerOf(id)); err != nil {
		return st, fmt.Errorf("clone: copy the base data directory for the recipient: %w", err)
	}
	runDir := filepath.Join(b.cat.Root().Path, "run", "clone-"+mariadb.RandomSecret()[:12])
	defer os.RemoveAll(runDir)
	in, err := mariadb.Start(b.bin, mariadb.Config{Datadir: recData, RunDir: runDir, Profile: mariadb.BuildProfile(opt.Profile),
		AdminPassword: b.cat.Admin(), Account: &id.Account,
		Extra: []string{"--skip-networking", "--plugin-load-add=mysql_clone.so"}})
	if err != nil {
		return st, fmt.Errorf("clone: start the recipient: %w", err)
	}
	defer in.Kill()
	if err := in.WaitReady(ctx); err != nil {
		return st, fmt.Errorf("clone: start the recipient: %w", err)
	}
	db, err := in.Open("")
	if err != nil {
		return st, err
	}
	target := filepath.Join(work, "data")
	st, err = capture.Clone(ctx, src, db, target, copts)
	db.Close()
	if err != nil {
		return st, err
	}
	if err := in.Stop(ctx, 5*time.Minute); err != nil {
		return st, fmt.Errorf("clone: stop the recipient: %w", err)
	}
	ents, err := os.ReadDir(target)
	if err != nil {
		return st, fmt.Errorf("clone: %w", err)
	}
	for _, e := range ents {
		if err := os.Rename(filepath.Join(target, e.Name()), filepath.Join(data, e.Name())); err != nil {
			return st, fmt.Errorf("clone: move the clone into place: %w", err)
		}
	}
	return st, nil
}

// dropUncaptured drops the user databases of a clone (MySQL's clone plugin
// copies the whole instance) that were not asked for: keep are the
// captured ones. It returns the dropped ones.
func dropUncaptured(ctx context.Context, db *sql.DB, keep []string) ([]string, error) {
	want := map[string]bool{"mysql": true, "sys": true, "information_schema": true, "performance_schema": true}
	for _, d := range keep {
		want[d] = true
	}
	rows, err := db.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
	if err != nil {
		return nil, fmt.Errorf("list the clone's databases: %w", err)
	}
	var drop []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return nil, err
		}
		if !want[s] {
			drop = append(drop, s)
		}
	}
	rows.Close()
	for _, d := range drop {
		if _, err := db.ExecContext(ctx, "DROP DATABASE "+quote.Ident(d)); err != nil {
			return nil, fmt.Errorf("drop %s, which was not asked for, from the clone: %w", d, err)
		}
	}
	return drop, nil
}
