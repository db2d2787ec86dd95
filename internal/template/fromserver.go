package template

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/sysmem"
	"github.com/pristinedb/pristine/internal/units"
)

// ServerSource says which live server a template is captured from
// (`template build --from-server`); see docs/capture.md.
type ServerSource struct {
	// DSN is a mysql:// URL (internal/dsn); empty means no capture.
	DSN string
	// Password, when set, replaces the DSN's: the CLI reads it from the
	// environment, a file or the terminal, never the command line.
	Password string
	// ConnectTimeout bounds connecting to the source (greeting and
	// authentication included), IOTimeout each read and write after; zero
	// means capture.DefaultConnectTimeout and capture.DefaultIOTimeout.
	ConnectTimeout, IOTimeout time.Duration
	// Databases to capture; empty means every non-system database.
	Databases []string
	// Method is logical, physical or auto (the default).
	Method string
	// LockWait bounds the wait for the snapshot's read lock (default 30s).
	LockWait time.Duration
	// WithPasswords carries the accounts' password hashes and plugins;
	// without it the accounts of the captured databases get a random
	// password nobody knows (docs/fidelity.md, "Accounts").
	WithPasswords bool
	// Insert copies rows with INSERT instead of LOAD DATA (benchmarks).
	Insert bool
	// Stream makes physical capture go through pristine's xbstream reader
	// instead of letting mariadb-backup write the files (benchmarks).
	Stream bool
	// Meter receives capture's live progress line (the command line passes
	// a terminal); nil draws none.
	Meter io.Writer
	// AfterSnapshot is a test seam: it runs once a logical capture's
	// snapshot is taken, before rows are copied.
	AfterSnapshot func(ctx context.Context) error
}

// liveSource is a probed source with the method chosen for it.
type liveSource struct {
	src            *capture.Source
	method, reason string
	marker         string // "gtid <pos>" or "time <RFC3339>"
}

// openSource connects to the source, resolves the method and the default
// database (the first captured one) and reads the change marker.
func (b *Builder) openSource(ctx context.Context, opt *BuildOptions) (*liveSource, error) {
	if opt.FromSQL != "" {
		return nil, errors.New("template build: --from-server and --from-sql cannot be combined: capture the server, then run SQL with --init-cmd")
	}
	cfg, err := dsn.Parse(opt.Server.DSN)
	if err != nil {
		return nil, fmt.Errorf("template build: --from-server: %w", err)
	}
	if opt.Server.Password != "" {
		cfg.Passwd = opt.Server.Password
	}
	if opt.Server.ConnectTimeout > 0 {
		cfg.Timeout = opt.Server.ConnectTimeout
	}
	if opt.Server.IOTimeout > 0 {
		cfg.ReadTimeout, cfg.WriteTimeout = opt.Server.IOTimeout, opt.Server.IOTimeout
	}
	src, err := capture.Open(ctx, cfg, opt.Server.Databases)
	if err != nil {
		return nil, fmt.Errorf("template build: %w", err)
	}
	method, reason, err := capture.Choose(ctx, src, b.bin, opt.Server.Method)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("template build: %w", err)
	}
	if opt.Database == "" {
		opt.Database = src.Databases[0]
	}
	if method == capture.MethodPhysical {
		// A copy of the source's data directory is started with the
		// settings it was made with, and MySQL's clone plugin wants the
		// recipient's character set and collation to be the source's:
		// the template takes them, under its own --server-option.
		opt.Profile.Options = mariadb.LayerOptions(src.Options, opt.Profile.Options)
	}
	ls := &liveSource{src: src, method: method, reason: reason}
	if src.GTID != "" {
		ls.marker = "gtid " + src.GTID
	} else {
		ls.marker = "time " + time.Now().UTC().Format(time.RFC3339Nano)
	}
	return ls, nil
}

// hashLive is the content key of a template captured from a live server
// (catalog.Live): the probed source's identity, databases, method and
// change marker.
func (b *Builder) hashLive(opt BuildOptions, ls *liveSource) string {
	in := b.inputs(opt)
	in.Live = &catalog.Live{Source: ls.src.Identity(), Databases: ls.src.Databases, Method: ls.method,
		Marker: ls.marker, WithPasswords: opt.Server.WithPasswords}
	k, _ := catalog.Key(in) // a live key never fails: its watch paths are read if they can be
	return k
}

// buildFromServer is buildData for a live source: the data directory comes
// from a physical copy, or from the base directory filled by a logical
// copy; then the server is started with the build profile, the lease
// account made, the init command run and the server stopped cleanly with
// innodb_fast_shutdown=0, exactly as for SQL input.
//
// ls is the source as Plan probed it: its marker is the key's. When the
// capture's snapshot holds a later position, the template is re-keyed to
// it (rekey) before anything is filed.
func (b *Builder) buildFromServer(ctx context.Context, dir string, opt BuildOptions, m *catalog.Meta, ls *liveSource) error {
	src := ls.src
	b.progress("capturing %s, databases %s, by %s capture (%s)", src.Name(), strings.Join(src.Databases, ","), ls.method, ls.reason)
	if src.GTID != "" {
		b.progress("change marker: GTID position %s (the template is reused while the source's position stays there)", src.GTID)
	} else {
		b.progress("change marker: capture time (the source has no binary log, so every build captures it again)")
	}
	copts := capture.Options{Workers: opt.Workers, LockWait: opt.Server.LockWait, WithPasswords: opt.Server.WithPasswords, Insert: opt.Server.Insert, Stream: opt.Server.Stream, Log: b.progress, AfterSnapshot: opt.Server.AfterSnapshot}
	if b.Progress != nil && opt.Server.Meter != nil {
		copts.Progress = opt.Server.Meter
	}
	data := filepath.Join(dir, "data")
	// After the server's kill below; a finished build is sealed already.
	// data moves to RAM for a logical capture that fits (ram.go).
	defer func() { _ = b.seal(data) }()
	var counters []capture.Counter
	if ls.method == capture.MethodPhysical {
		if err := b.cat.Backend().MakeDir(data); err != nil {
			return err
		}
		if src.Flavor.ClonePlugin() {
			st, err := b.cloneMySQL(ctx, src, dir, data, opt, copts)
			if err != nil {
				return err
			}
			b.progress("cloned %s in %.1fs", units.Bytes(st.Bytes), st.Elapsed.Seconds())
			b.rekey(opt, ls, st.GTID, m)
		} else {
			st, err := capture.Physical(ctx, src, data, len(opt.Server.Databases) == 0, copts)
			if err != nil {
				return err
			}
			counters = st.Counters
			b.progress("copied and prepared %s in %.1fs", units.Bytes(st.Bytes), st.Elapsed.Seconds())
			b.rekey(opt, ls, st.GTID, m)
		}
		// The copy's accounts are the source's: secure them on a private
		// start without grant tables before it is ever served on TCP.
		if err := b.secure(ctx, data, mariadb.BuildProfile(opt.Profile), nil); err != nil {
			return err
		}
	} else {
		base, err := b.base(ctx, opt.Profile)
		if err != nil {
			return err
		}
		// A logical capture is a load: it runs in RAM when it fits.
		if data, _, err = b.stageData(dir, base, opt, m.Hash, 2*src.Bytes); err != nil {
			return err
		}
	}
	id, err := b.claim(data)
	if err != nil {
		return err
	}
	runDir := filepath.Join(b.cat.Root().Path, "run", "build-"+m.Hash[:12])
	defer os.RemoveAll(runDir)
	prof := mariadb.BuildProfile(opt.Profile)
	if ls.method == capture.MethodLogical {
		// Indexes built in memory load much faster: size the buffer pool
		// to the data, within a quarter of the free memory.
		prof.BufferPool = max(prof.BufferPool, min(src.Bytes+src.Bytes/4, sysmem.AvailableOr(1<<30)/4))
	}
	in, err := mariadb.StartReady(ctx, b.bin, mariadb.Config{Datadir: data, RunDir: runDir, Profile: prof, AdminPassword: b.cat.Admin(), Account: &id.Account})
	if err != nil {
		return err
	}
	defer in.Kill()
	db, err := in.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	if ls.method == capture.MethodPhysical {
		// The accounts and AUTO_INCREMENT counters a logical capture
		// carries: the accounts in scope of the databases, the source's
		// counters (docs/fidelity.md).
		n, err := capture.PruneAccounts(ctx, db, src.Flavor, src.Databases, opt.Server.WithPasswords)
		if err != nil {
			return err
		}
		set, err := capture.ApplyCounters(ctx, db, counters)
		if err != nil {
			return err
		}
		b.progress("removed %d accounts out of scope of %s; set %d AUTO_INCREMENT counters to the source's", n, strings.Join(src.Databases, ","), set)
		if src.Flavor.ClonePlugin() {
			// A clone holds every database of the source; its InnoDB
			// counters are the source's already.
			dropped, err := dropUncaptured(ctx, db, src.Databases)
			if err != nil {
				return err
			}
			if len(dropped) > 0 {
				b.progress("dropped the databases not asked for from the clone: %s", strings.Join(dropped, ", "))
			}
		}
	} else {
		st, err := capture.Logical(ctx, src, in.DSN(""), copts)
		if err != nil {
			return fmt.Errorf("capture %s: %w", src.Name(), err)
		}
		b.progress("captured %d rows (%s) of %d tables, %d objects, %d accounts in %.1fs", st.Rows, units.Bytes(st.Bytes), st.Tables, st.Objects, st.Accounts, st.Elapsed.Seconds())
		b.rekey(opt, ls, st.GTID, m)
		// Root at other hosts and anonymous accounts the copy brought
		// along go (or are locked when they are DEFINERs).
		if err := mariadb.SecureAccounts(ctx, db, b.cat.Admin(), false); err != nil {
			return err
		}
	}
	dbName := opt.database()
	if err := setupAccount(ctx, db, dbName, m); err != nil {
		return err
	}
	m.Inputs = []string{fmt.Sprintf("%s databases=%s method=%s marker=%s", src.Name(), strings.Join(src.Databases, ","), ls.method, ls.marker)}
	if opt.InitCmd != "" {
		b.progress("running init command")
		if err := runInitCmd(ctx, in, opt, m); err != nil {
			return err
		}
	}
	return b.finishBuild(ctx, in, db, opt, m)
}
