package overheadbench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/svcuser"
	"github.com/pristinedb/pristine/internal/template"
)

// bareSet is the baseline: servers started the plainest way on the same
// template, as a script without pristine would: a copy-on-write clone of
// the template given to the server's own id (as root pristine runs no
// server as root, and the template is root's), mariadbd with a slot's
// options, wait until it answers. The ids are claimed before the clock
// starts.
type bareSet struct {
	cat     *catalog.Catalog
	bin     *mariadb.Binary
	tmpl    string // the template's data directory
	backend cow.Backend
	dir     string // the clones, under the root's data directory
	run     string // the servers' run directories
	mu      sync.Mutex
	ins     []*mariadb.Instance
	ids     []*svcuser.Claimed
}

func newBareSet(store *template.Builder, m *catalog.Meta) (*bareSet, error) {
	cat := store.Catalog()
	b := &bareSet{cat: cat, bin: store.Binary(), tmpl: cat.DataDir(m.Hash), backend: cat.Backend(),
		dir: filepath.Join(cat.Root().Data(), "overhead-bare"), run: filepath.Join(cat.Root().Path, "run", "ovh")}
	b.close() // what a killed run left
	for _, d := range []string{b.dir, b.run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// start clones the template n times and starts a server on each, as many
// at once as a pool starts (pool.DefaultParallel), and returns the CPU
// the servers used until each answered.
func (b *bareSet) start(ctx context.Context, n int) (time.Duration, error) {
	var g errgroup.Group
	g.SetLimit(pool.DefaultParallel())
	var mu sync.Mutex
	var cpu time.Duration
	for i := range n {
		g.Go(func() error {
			in, err := b.startOne(ctx, i)
			if err != nil {
				return err
			}
			c := procCPU(in.PID())
			mu.Lock()
			cpu += c
			mu.Unlock()
			return nil
		})
	}
	return cpu, g.Wait()
}

// startOne clones the template for server i and starts it.
func (b *bareSet) startOne(ctx context.Context, i int) (*mariadb.Instance, error) {
	data := filepath.Join(b.dir, strconv.Itoa(i), "data")
	id := b.ids[i]
	var own *cow.Owner
	if id.Drop {
		own = &cow.Owner{UID: id.UID, GID: id.GID, Shared: svcuser.DataGID}
	}
	if err := cow.CloneAs(b.backend, b.tmpl, data, own); err != nil {
		return nil, fmt.Errorf("bare server %d: %w", i, err)
	}
	extra, err := pool.SlotArgs(data, b.bin.Flavor, pool.Options{})
	if err != nil {
		return nil, fmt.Errorf("bare server %d: %w", i, err)
	}
	in, err := mariadb.Start(b.bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(b.run, strconv.Itoa(i)),
		Profile: mariadb.DefaultProfile(), AdminPassword: b.cat.Admin(), Extra: extra, Account: &id.Account})
	if err != nil {
		return nil, fmt.Errorf("bare server %d: %w", i, err)
	}
	b.mu.Lock()
	b.ins = append(b.ins, in)
	b.mu.Unlock()
	if err := in.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("bare server %d: %w", i, err)
	}
	return in, nil
}

// pickTable names the InnoDB table of database db the reset check
// changes: the smallest with rows that no foreign key links to another
// table (so restoring it is the whole reset).
func (b *bareSet) pickTable(ctx context.Context, db string) (string, error) {
	admin, err := b.first().Open("")
	if err != nil {
		return "", err
	}
	defer admin.Close()
	var name string
	err = admin.QueryRowContext(ctx, `SELECT t.table_name FROM information_schema.tables t
WHERE t.table_schema = ? AND t.engine = 'InnoDB' AND t.table_rows > 0
AND NOT EXISTS (SELECT 1 FROM information_schema.referential_constraints r
  WHERE r.constraint_schema = t.table_schema AND (r.table_name = t.table_name OR r.referenced_table_name = t.table_name))
ORDER BY t.data_length, t.table_name LIMIT 1`, db).Scan(&name)
	if err != nil {
		return "", fmt.Errorf("pick a table of %s to change: %w", db, err)
	}
	return name, nil
}

// resets changes one row of db.table on the first bare server and restores
// the table the way the in-place reset does, reduced to its SQL steps:
// DISCARD TABLESPACE, a clone of the template's .ibd in its place, IMPORT
// TABLESPACE. It returns the medians of the wall and CPU times of the
// restore (the change is not timed).
func (b *bareSet) resets(ctx context.Context, m *catalog.Meta, table string, n int) (wallMS, cpuMS float64, err error) {
	in := b.first()
	admin, err := in.Open("")
	if err != nil {
		return 0, 0, err
	}
	defer admin.Close()
	admin.SetMaxOpenConns(1)
	db := m.Database()
	qt := quote.Ident(db) + "." + quote.Ident(table)
	src := filepath.Join(b.tmpl, db, table+".ibd")
	dst := filepath.Join(in.Config.Datadir, db, table+".ibd")
	// The restored files go to the server's id, as its database
	// directory is (the table's own file may be the template's, shared).
	var st unix.Stat_t
	if err := unix.Stat(filepath.Dir(dst), &st); err != nil {
		return 0, 0, fmt.Errorf("bare reset: %w", err)
	}
	cfg, err := exportCfg(ctx, admin, qt, strings.TrimSuffix(dst, ".ibd")+".cfg")
	if err != nil {
		return 0, 0, fmt.Errorf("bare reset: %w", err)
	}
	var walls, cpus []float64
	for range n {
		if _, err := admin.ExecContext(ctx, "DELETE FROM "+qt+" LIMIT 1"); err != nil {
			return 0, 0, fmt.Errorf("bare reset: change %s: %w", qt, err)
		}
		cpu0, srv0, t0 := selfCPU(), procCPU(in.PID()), time.Now()
		if err := restoreTable(ctx, admin, qt, src, dst, cfg, int(st.Uid), int(st.Gid)); err != nil {
			return 0, 0, fmt.Errorf("bare reset: %w", err)
		}
		walls = append(walls, ms(time.Since(t0)))
		cpus = append(cpus, ms(selfCPU()-cpu0+procCPU(in.PID())-srv0))
	}
	return median(walls), median(cpus), nil
}

// exportCfg is the .cfg file FLUSH TABLES ... FOR EXPORT writes for table
// qt at cfgPath (what IMPORT TABLESPACE checks a tablespace against; the
// in-place reset keeps the template's, package exportmeta), read while
// the table is as the template has it.
func exportCfg(ctx context.Context, admin *sql.DB, qt, cfgPath string) ([]byte, error) {
	conn, err := admin.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES "+qt+" FOR EXPORT"); err != nil {
		return nil, fmt.Errorf("export %s: %w", qt, err)
	}
	cfg, err := os.ReadFile(cfgPath)
	if _, uerr := conn.ExecContext(ctx, "UNLOCK TABLES"); err == nil && uerr != nil {
		err = uerr
	}
	return cfg, err
}

// restoreTable puts the template's tablespace of table qt back: the SQL
// steps an in-place restore of one InnoDB table needs at least, with the
// table's .cfg (cfg) beside the tablespace for the import.
func restoreTable(ctx context.Context, admin *sql.DB, qt, src, dst string, cfg []byte, uid, gid int) error {
	conn, err := admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 0"); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "ALTER TABLE "+qt+" DISCARD TABLESPACE"); err != nil {
		return fmt.Errorf("discard %s: %w", qt, err)
	}
	if err := cloneFile(src, dst, uid, gid); err != nil {
		return err
	}
	cfgPath := strings.TrimSuffix(dst, ".ibd") + ".cfg"
	if err := os.WriteFile(cfgPath, cfg, 0o660); err != nil {
		return err
	}
	defer os.Remove(cfgPath)
	if err := os.Chown(cfgPath, uid, gid); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "ALTER TABLE "+qt+" IMPORT TABLESPACE"); err != nil {
		return fmt.Errorf("import %s: %w", qt, err)
	}
	return nil
}

// cloneFile makes dst a copy-on-write clone of src (a copy where the
// filesystem cannot clone), owned by uid:gid.
func cloneFile(src, dst string, uid, gid int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o660)
	if err != nil {
		return err
	}
	if err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); err != nil {
		if _, err := out.ReadFrom(in); err != nil {
			out.Close()
			return err
		}
	}
	if err := out.Chown(uid, gid); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (b *bareSet) first() *mariadb.Instance {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ins[0]
}

// stopAll kills the bare servers and removes their clones.
func (b *bareSet) stopAll() {
	b.mu.Lock()
	ins := b.ins
	b.ins = nil
	b.mu.Unlock()
	for _, in := range ins {
		in.Kill()
	}
	ents, _ := os.ReadDir(b.dir)
	for _, e := range ents {
		data := filepath.Join(b.dir, e.Name(), "data")
		if _, err := os.Lstat(data); err == nil {
			_ = b.backend.Remove(data)
		}
	}
	_ = os.RemoveAll(b.dir)
	_ = os.RemoveAll(b.run)
	b.mu.Lock()
	defer b.mu.Unlock()
	svcuser.ReleaseAll(b.ids)
	b.ids = nil
}

// claim claims the ids of n bare servers.
func (b *bareSet) claim(n int) error {
	paths := make([]string, n)
	for i := range paths {
		if err := os.MkdirAll(filepath.Join(b.dir, strconv.Itoa(i)), 0o755); err != nil {
			return err
		}
		paths[i] = filepath.Join(b.dir, strconv.Itoa(i), "data")
	}
	ids, err := svcuser.ClaimAll(paths)
	if err != nil {
		return fmt.Errorf("bare servers: %w", err)
	}
	b.mu.Lock()
	b.ids = ids
	b.mu.Unlock()
	return nil
}

// close is stopAll, for a deferred call.
func (b *bareSet) close() { b.stopAll() }
