package template

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/sqlload"
	"github.com/pristinedb/pristine/internal/units"
)

// BuildOptions says what makes a template.
type BuildOptions struct {
	Name string
	// FromSQL is a .sql/.sql.gz/.sql.zst file, a directory of them, or "-"
	// for stdin; empty for a template made by InitCmd alone.
	FromSQL string
	// InitCmd runs in a shell against the template server, with its DSN in
	// the environment (DATABASE_URL, MYSQL_HOST, ...), after FromSQL loads.
	InitCmd string
	// Watch lists files or directories whose content goes into the hash
	// (migrations and seeders InitCmd reads).
	Watch []string
	// Key is a content key computed by a client (over its migrations and
	// fixtures) for a template it builds itself through the API.
	Key string
	// Database is the schema loads run in and leases hand out; default: Name.
	Database string
	// DBsPerSlot, when above 1, puts that many copies of Database in the
	// template (Database, Database_2, ...), made with IMPORT TABLESPACE.
	DBsPerSlot int
	Profile    mariadb.Profile
	Workers    int  // parallel load connections
	Rebuild    bool // build even when a template with the same hash exists
	// InitOutput receives the init command's output; nil means stderr.
	InitOutput io.Writer
	// Server, when its DSN is set, captures a live server (fromserver.go).
	Server ServerSource
}

// somethingToBuild fails for options that name no input.
func (o *BuildOptions) somethingToBuild() error {
	if o.FromSQL == "" && o.InitCmd == "" && o.Server.DSN == "" {
		return errors.New("template build: nothing to build from: pass --from-sql PATH, --init-cmd CMD, or both")
	}
	return nil
}

func (o *BuildOptions) database() string {
	if o.Database != "" {
		return o.Database
	}
	return regexp.MustCompile(`[^A-Za-z0-9_]`).ReplaceAllString(o.Name, "_")
}

// inputs are the content key's inputs common to every kind of build.
func (b *Builder) inputs(opt BuildOptions) catalog.Inputs {
	return catalog.Inputs{Name: opt.Name, Key: opt.Key, Server: b.bin.Version, Flavor: string(b.bin.Flavor),
		Profile: opt.Profile.Key() + b.timezonesKey(), Database: opt.database(), DBsPerSlot: opt.DBsPerSlot, InitCmd: opt.InitCmd, Watch: opt.Watch}
}

// Build makes the template opt describes, or returns the one already built
// from the same inputs (built is then false). A failed build leaves nothing
// behind: no data directory, no server, no meta.json. It is Plan, then
// Plan.Build: callers that look the key up elsewhere first (a fleet cache)
// make the plan themselves and pass it on.
func (b *Builder) Build(ctx context.Context, opt BuildOptions) (*catalog.Meta, bool, error) {
	if err := catalog.ValidName(opt.Name); err != nil {
		return nil, false, err
	}
	if err := opt.somethingToBuild(); err != nil {
		return nil, false, err
	}
	p, err := b.Plan(ctx, opt)
	if err != nil {
		return nil, false, err
	}
	defer p.Close()
	timelineOf(ctx).Mark(PhaseKey)
	return p.Build(ctx)
}

// build is Plan.Build: the template under p.Hash, built unless it exists.
func (b *Builder) build(ctx context.Context, p *Plan) (m *catalog.Meta, built bool, err error) {
	opt, hash := p.Opt, p.Hash
	if m, err := b.cat.Load(hash); err == nil && !opt.Rebuild && catalog.CheckSecured(m) == nil {
		return m, false, nil
	}
	unlock, err := b.cat.Lock(hash)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if m, err := b.cat.Load(hash); err == nil {
		// A template of an older pristine (accounts not secured) is
		// built again.
		if !opt.Rebuild && catalog.CheckSecured(m) == nil {
			return m, false, nil // someone else built it while we waited
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
	defer func() {
		if err != nil {
			if rmErr := b.discard(dir); rmErr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, rmErr)
			}
			b.cat.RemoveLock(hash)
			_, _ = b.cat.PruneBases() // a store with no template holds nothing
		}
	}()
	tl := timelineOf(ctx)
	tl.Mark(PhaseStage)
	m = b.newMeta(opt, hash)
	if opt.FromSQL != "" {
		m.Inputs = []string{opt.FromSQL}
	}
	build := b.buildData
	if p.live != nil {
		build = func(ctx context.Context, dir string, opt BuildOptions, m *catalog.Meta) error {
			return b.buildFromServer(ctx, dir, opt, m, p.live)
		}
	}
	if err := build(ctx, dir, opt, m); err != nil {
		return nil, false, fmt.Errorf("template build %s: %w", opt.Name, err)
	}
	if err := b.settle(dir); err != nil {
		return nil, false, fmt.Errorf("template build %s: %w", opt.Name, err)
	}
	if err := b.recompress(dir); err != nil {
		return nil, false, fmt.Errorf("template build %s: %w", opt.Name, err)
	}
	tl.Mark(PhaseFile)
	if m.Hash != hash {
		// Re-keyed (rekey): filed under the key of the data it holds.
		done, have, err := b.takeRekeyed(dir, m)
		if err != nil {
			return nil, false, err
		}
		if have != nil {
			b.cat.RemoveLock(hash)
			return have, false, nil
		}
		defer done()
		defer b.cat.RemoveLock(hash) // nothing is filed under the probed key
	}
	if err := b.publish(dir, m, start); err != nil {
		return nil, false, err
	}
	tl.Mark(PhasePublish)
	return m, true, nil
}

// recompress compresses the finished build's data directory when the
// store is on a compressed btrfs (scratch up --compress, or a root's own
// btrfs mounted with compress=): the server wrote it uncompressed
// (cow.Recompress says why). Templates on any other filesystem are left
// as they are, and slots never pay for it.
func (b *Builder) recompress(dir string) error {
	start := time.Now()
	done, err := cow.Recompress(filepath.Join(dir, "data"), mariadb.ServerFile)
	if done {
		b.progress("compressed the data directory in %.1fs", time.Since(start).Seconds())
	}
	return err
}

// takeRekeyed takes the lock of a re-keyed build's new key. When a
// template is filed under that key already, the build is thrown away and
// that template returned: it holds the same position of the source.
func (b *Builder) takeRekeyed(dir string, m *catalog.Meta) (unlock func(), have *catalog.Meta, err error) {
	unlock, err = b.cat.TryLock(m.Hash)
	if err != nil {
		return nil, nil, err
	}
	if unlock == nil {
		return nil, nil, errRekeyBusy(m.Name, m.Hash)
	}
	if old, err := b.cat.Load(m.Hash); err == nil && catalog.CheckSecured(old) == nil {
		unlock()
		if err := b.discard(dir); err != nil {
			return nil, nil, err
		}
		b.progress("template %s of that position is here already (%s): using it", old.Name, old.Hash[:12])
		return nil, old, nil
	} else if err == nil {
		if err := b.cat.RemoveLocked(old); err != nil {
			unlock()
			return nil, nil, err
		}
	}
	return unlock, nil, nil
}

// publish stamps a finished build and publishes it in the catalog: from
// then on the template exists.
func (b *Builder) publish(dir string, m *catalog.Meta, start time.Time) error {
	m.Created = time.Now().UTC()
	m.LastUsed = m.Created
	m.BuildSeconds = time.Since(start).Seconds()
	if err := b.cat.Publish(dir, m); err != nil {
		return fmt.Errorf("template build %s: %w", m.Name, err)
	}
	b.progress("template %s built in %.1fs (%s, %s on disk)", m.Name, m.BuildSeconds, m.Hash[:12], units.Bytes(m.Bytes))
	return nil
}

// newMeta starts the record of a build.
func (b *Builder) newMeta(opt BuildOptions, hash string) *catalog.Meta {
	return &catalog.Meta{Name: opt.Name, Hash: hash, Key: opt.Key, Server: b.bin.Version, Flavor: string(b.bin.Flavor),
		Backend: b.cat.Backend().Name(), LogFileSize: opt.Profile.LogFileSize, ServerOptions: opt.Profile.Options, User: "pristine", Accounts: catalog.AccountsVersion,
		Password: mariadb.RandomSecret(), InitCmd: opt.InitCmd, Databases: []string{opt.database()}}
}

// buildData clones the base data directory into dir/data, starts a server
// on it, loads the inputs, runs the init command and stops it cleanly.
func (b *Builder) buildData(ctx context.Context, dir string, opt BuildOptions, m *catalog.Meta) error {
	in, db, err := b.startBuild(ctx, dir, opt, m)
	if err != nil {
		return err
	}
	defer b.seal(in.Config.Datadir)      // after the kill; a finished build is sealed already
	defer os.RemoveAll(in.Config.RunDir) // after the kill: a failed build leaves no run/build-*
	defer in.Kill()
	defer db.Close()
	tl := timelineOf(ctx)
	if opt.FromSQL != "" {
		if err := b.load(ctx, in, opt); err != nil {
			return err
		}
		tl.Mark(PhaseLoad)
	}
	if opt.InitCmd != "" {
		b.progress("running init command")
		if err := runInitCmd(ctx, in, opt, m); err != nil {
			return err
		}
		tl.Mark(PhaseInit)
	}
	facts, err := readSchemaFacts(ctx, db)
	if err != nil {
		return err
	}
	b.checkForeignKeys(facts, m)
	return b.finish(ctx, in, db, opt, m, facts)
}

// startBuild clones the base data directory into dir/data and starts a
// server on it with the build profile, with the template's database and
// account made. The caller kills the server if it does not finish.
func (b *Builder) startBuild(ctx context.Context, dir string, opt BuildOptions, m *catalog.Meta) (*mariadb.Instance, *sql.DB, error) {
	tl := timelineOf(ctx)
	base, err := b.base(ctx, opt.Profile)
	if err != nil {
		return nil, nil, err
	}
	tl.Mark(PhaseBase)
	// The build server runs as a server id of its own, on a clone that
	// belongs to it: the build account (every privilege, handed to an API
	// client) reaches no other template and no slot. The clone is in RAM
	// when it fits (ram.go), else dir/data.
	data, id, err := b.stageData(dir, base, opt, m.Hash, 0)
	if err != nil {
		return nil, nil, err
	}
	tl.Mark(PhaseRAMCopy)
	runDir := filepath.Join(b.cat.Root().Path, "run", "build-"+m.Hash[:12])
	in, err := mariadb.StartReady(ctx, b.bin, mariadb.Config{Datadir: data, RunDir: runDir, Profile: mariadb.BuildProfile(opt.Profile), AdminPassword: b.cat.Admin(), Account: &id.Account})
	if err != nil {
		os.RemoveAll(runDir)
		_ = b.seal(data)
		return nil, nil, err
	}
	db, err := in.Open("")
	if err == nil {
		dbName := opt.database()
		if opt.FromSQL != "" {
			dbName = "" // the loader makes it, unless the dump does
		}
		err = setupAccount(ctx, db, dbName, m)
	}
	if err != nil {
		in.Kill()
		os.RemoveAll(runDir)
		_ = b.seal(data)
		return nil, nil, err
	}
	tl.Mark(PhaseStart)
	return in, db, nil
}

// finishBuild makes the copies of --dbs-per-slot and stops the server
// cleanly, leaving a data directory every clone can start from.
func (b *Builder) finishBuild(ctx context.Context, in *mariadb.Instance, db *sql.DB, opt BuildOptions, m *catalog.Meta) error {
	facts, err := readSchemaFacts(ctx, db)
	if err != nil {
		os.RemoveAll(in.Config.RunDir)
		return err
	}
	return b.finish(ctx, in, db, opt, m, facts)
}

// finish is finishBuild with the schema's facts read already.
func (b *Builder) finish(ctx context.Context, in *mariadb.Instance, db *sql.DB, opt BuildOptions, m *catalog.Meta, facts *schemaFacts) error {
	defer os.RemoveAll(in.Config.RunDir)
	dbName := opt.database()
	m.Databases = []string{dbName}
	// InnoDB persists only the AUTO_INCREMENT values rows took: persist
	// the counters themselves, so every clone (and every --dbs-per-slot
	// copy, made from these files) hands out the next id this server would.
	if n, err := capture.PersistCountersOf(ctx, db, facts.counters); err != nil {
		return err
	} else if n > 0 {
		b.progress("persisted the AUTO_INCREMENT counters of %d tables", n)
	}
	if opt.DBsPerSlot > 1 {
		b.progress("making %d copies of %s inside the template", opt.DBsPerSlot-1, dbName)
		names, err := copySchema(ctx, db, in.Config.Datadir, dbName, opt.DBsPerSlot)
		if err != nil {
			return err
		}
		m.Databases = names
	}
	w := memoryWarning(facts.memory)
	if opt.DBsPerSlot > 1 {
		w = memoryRows(ctx, db) // the copies' tables too
	}
	if w != "" {
		m.Warnings = append(m.Warnings, w)
		b.progress("warning: %s", w)
	}
	tl := timelineOf(ctx)
	tl.Mark(PhaseChecks)
	// The build account's password was handed to the builder: no clone may
	// accept it. Then no object may run as it, as root or with a global
	// privilege in a slot: they are re-owned or reduced.
	if err := b.secureDefiners(ctx, db, m); err != nil {
		return err
	}
	tl.Mark(PhaseDefiners)
	b.exportMeta(ctx, db, in.Config.Datadir)
	tl.Mark(PhaseExport)
	// A slow shutdown purges undo logs and merges buffers, so slots start
	// with no background work and every clone is byte-identical.
	if _, err := db.ExecContext(ctx, "SET GLOBAL innodb_fast_shutdown=0"); err != nil {
		return fmt.Errorf("prepare shutdown: %w", err)
	}
	db.Close()
	b.progress("stopping the template server cleanly")
	if err := in.Stop(ctx, 10*time.Minute); err != nil {
		return err
	}
	tl.Mark(PhaseStop)
	// Every clone a server of its own (MySQL's auto.cnf), and read-only
	// to every server from now on: slots clone it.
	if err := b.bin.ForgetIdentity(in.Config.Datadir); err != nil {
		return err
	}
	err := b.seal(in.Config.Datadir)
	tl.Mark(PhaseSeal)
	return err
}

func (b *Builder) load(ctx context.Context, in *mariadb.Instance, opt BuildOptions) error {
	srcs, err := sqlload.Sources(opt.FromSQL, func(path, why string) {
		b.progress("skipped %s: %s", path, why)
	})
	if err != nil {
		return err
	}
	b.progress("loading %s", opt.FromSQL)
	stats, err := sqlload.Load(ctx, in.DSN(""), srcs, sqlload.Options{Database: opt.database(), Workers: opt.Workers})
	if err != nil {
		return err
	}
	b.progress("loaded %d statements, %s in %.1fs", stats.Statements, units.Bytes(stats.Bytes), stats.Duration.Seconds())
	for _, w := range stats.Uncompressed {
		b.progress("left uncompressed (its definition names a row format InnoDB does not page compress: COMPACT, REDUNDANT or COMPRESSED): %s", w)
	}
	if stats.Statements == 0 {
		return fmt.Errorf("%s holds no SQL statements (%s read): check the file (an empty dump, or a failed mariadb-dump?); a template from migrations alone needs only --init-cmd", b.inputName(opt.FromSQL), units.Bytes(stats.Bytes))
	}
	return nil
}

// spoolStdin copies standard input to a file under the root so it can be
// hashed and then loaded.
func (b *Builder) spoolStdin() (string, func(), error) {
	dir := filepath.Join(b.cat.Root().Path, "tmp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp(dir, "stdin-*.sql")
	if err != nil {
		return "", nil, fmt.Errorf("spool stdin: %w", err)
	}
	cleanup := func() {
		os.Remove(f.Name())
		os.Remove(dir) // only when empty
	}
	if _, err := io.Copy(f, os.Stdin); err != nil {
		f.Close()
		cleanup()
		return "", nil, fmt.Errorf("spool stdin: %w", err)
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}
