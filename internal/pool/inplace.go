package pool

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/exportmeta"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// The in-place reset: a slot whose last holder changed only rows of
// InnoDB, Aria and MyISAM tables is made pristine again without
// restarting its server. Every connection of the holder is killed, what
// changed is found (changes.go), and each changed table gets the
// template's table files back:
//
//   - InnoDB: ALTER TABLE ... DISCARD TABLESPACE, the template's .ibd
//     cloned (FICLONE, a copy where the filesystem cannot) from the slot's
//     seed, ALTER TABLE ... IMPORT TABLESPACE, with foreign key checks
//     off. The imported file carries the template's rows, indexes and
//     AUTO_INCREMENT; the import recomputes the table's statistics from
//     them.
//   - InnoDB on MySQL, rows the holder added (few, to a table the
//     template has empty or only inserted into): deleted, the
//     AUTO_INCREMENT counter set back (mariadb.Changes.DeleteAdded).
//   - InnoDB on MySQL, a few rows written to a table of at most
//     writeBackRows rows with a primary key: the rows that differ from
//     the template's deleted and the template's inserted, from the rows
//     the pool read once from the table just imported
//     (mariadb.Changes.WriteBack, inplace_writeback.go).
//   - Aria and MyISAM: FLUSH TABLES closes the table, its data and index
//     files are replaced by clones of the template's, FLUSH TABLES again.
//
// Anything else the holder may have done (DDL, an account, routine or
// event, TRUNCATE, a global variable, a file, a prepared XA transaction,
// a temporary table still alive, a system table's rows, a changed table
// of another engine or with an encoded file name), and any failure,
// falls back to the full reset (kill, clone, start), with the reason
// counted in Stats.ResetPaths.
//
// A daemon killed during an in-place reset never hands the slot out dirty:
// the lease was deleted from the journal before the reset began, and a
// restarted daemon clones every slot that has no lease to restore afresh
// (planRestore, startAll).

// A slot of several databases (--dbs-per-slot) is reset once every one
// was handed out and returned; in place as one: every holder's account is
// locked and its connections killed, the changed tables of every database
// restored, and each database's account handed on.

// Reset paths, as counted in Stats.ResetPaths: "inplace", "full" (a slot
// that never tried: a restored lease, its server gone)
// and "full:<reason>" (Fallback*).
const (
	PathInPlace = "inplace"
	PathFull    = "full"
)

// inplaceEnv, set to "off" in the daemon's environment, turns the
// in-place reset off: every reset is full (for measuring one against the
// other).
const inplaceEnv = "PRISTINE_INPLACE_RESET"

// inplaceTimeout bounds one in-place reset.
const inplaceTimeout = 30 * time.Second

// inplaceHook, when set (tests), is called once the first changed table
// is restored, before the others: the middle of an in-place reset.
var inplaceHook func(slot int)

// pauseEnv names a file: a daemon started with it set stops every
// in-place reset in its middle (inplaceHook), writes the file and waits
// forever, so a test can kill the daemon there.
const pauseEnv = "PRISTINE_TEST_INPLACE_PAUSE"

func init() {
	if path := os.Getenv(pauseEnv); path != "" {
		inplaceHook = func(slot int) {
			_ = os.WriteFile(path, []byte(strconv.Itoa(slot)+"\n"), 0o644)
			select {}
		}
	}
}

// resetInPlace tries to reset a slot taken from the reset queue in place.
// It reports true when it took care of the slot (reset in place, or the
// pool went down meanwhile), false when the full reset must run: the slot
// is as it was, still Resetting.
func (p *Pool) resetInPlace(s *slot) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	live, isLive := s.srv.(*liveServer)
	base := s.inplace
	if s.state != Resetting || !isLive || !live.Running() || base == nil {
		p.countPath(PathFull)
		p.mu.Unlock()
		return false
	}
	if os.Getenv(inplaceEnv) == "off" {
		p.countPath(PathFull + ":" + FallbackOff)
		p.mu.Unlock()
		return false
	}
	if base.ineligible != "" {
		p.countPath(PathFull + ":" + FallbackIneligible)
		p.mu.Unlock()
		return false
	}
	if p.foreignProcess(s.idx, live.PID()) {
		// Something the server forked (a lease that became root of its
		// server) would live on into the next lease: the full reset
		// replaces the server and kills its group.
		p.countPath(PathFull + ":" + FallbackProcess)
		p.log.Info("in-place reset: resetting fully", "template", p.Meta.Name, "slot", s.idx, "reason", FallbackProcess)
		p.mu.Unlock()
		return false
	}
	pre := s.handed
	s.handed = nil
	if pre != nil && (pre.srv != s.srv || len(s.units) != 1) {
		pre = nil
	}
	gen, files := s.gen, s.files
	accts, dbs := make([]account, len(s.units)), make([]string, len(s.units))
	for i, u := range s.units {
		accts[i], dbs[i] = u.acct, u.db
	}
	job := inplaceJob{slot: s.idx, admin: live.admin, globals: live.globals, purge: live.purge, settle: p.marksRead(), kinds: &p.kinds, flavor: live.Binary.Flavor, base: base, pre: pre, accts: accts, dbs: dbs, files: files,
		dirs: slotDirs(s), data: filepath.Join(s.dir, "data"), src: p.pristineSource(s), meta: p.metaSet()}
	if job.flavor.Changes().WriteBack {
		job.rows = &p.rows
	}
	p.mu.Unlock()

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), inplaceTimeout)
	out, err := job.run(ctx)
	if err == nil {
		live.warmLogins(ctx, out.accts...)
	}
	cancel()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return true
	}
	if s.gen != gen || s.srv != live {
		return false // not expected: nothing but the reset worker moves a Resetting slot
	}
	p.log.Debug("in-place reset", "template", p.Meta.Name, "slot", s.idx, "phases", strings.Join(job.phases, ", "))
	if err != nil {
		reason := fallbackReason(err)
		p.countPath(PathFull + ":" + reason)
		p.log.Info("in-place reset: resetting fully", "template", p.Meta.Name, "slot", s.idx, "reason", reason, "why", err.Error())
		return false
	}
	for i := range s.units {
		s.units[i].acct = out.accts[i]
	}
	s.mark, s.files, s.inplace = out.mark, out.files, out.base
	p.readyInPlace(s, out, start)
	if out.tables > 0 && markSettles(job.flavor) && job.settle && !out.settled {
		go p.settleMark(s, s.gen, live, out.base.globals)
	}
	return true
}

// markSettles reports whether a write mark of flavour f moves on its own
// after tables are restored in place: it holds InnoDB's log sequence
// number (MariaDB), which the purge of the restore's undo logs moves once
// the statements returned, so the reset waits for the purge (purge.go).
// MySQL's mark counts statements (mariadb.Changes.RowWrites), which
// nothing but a client's statement moves.
func markSettles(f mariadb.Flavor) bool {
	return slices.Contains(f.Changes().RowWrites, f.LSNStatus())
}

// readyInPlace makes a slot reset in place ready; the caller holds p.mu.
func (p *Pool) readyInPlace(s *slot, out *inplaceDone, start time.Time) {
	if err := p.move(s, Ready, "restored in place: "+out.summary); err != nil {
		return
	}
	for i := range s.units {
		s.units[i].spent = false
	}
	s.err, s.failing = "", false
	if out.tables > 0 {
		s.imported = s.srv
	}
	p.countPath(PathInPlace)
	p.stats.TablesRestored += int64(out.tables)
	p.observe("reset", time.Since(start))
	p.signal()
}

// countPath counts a reset by its path; the caller holds p.mu.
func (p *Pool) countPath(path string) {
	if p.stats.ResetPaths == nil {
		p.stats.ResetPaths = map[string]int64{}
	}
	p.stats.ResetPaths[path]++
}

// pristineSource is the data directory the slot's clones come from: its
// seed (btrfs, owned by the slot's id) or the template's.
func (p *Pool) pristineSource(s *slot) string {
	seed := filepath.Join(p.dir, seedsDir, fmt.Sprintf("%03d", s.idx))
	if st, err := os.Stat(seed); err == nil && st.IsDir() {
		return seed
	}
	if p.cat == nil {
		return ""
	}
	return p.cat.DataDir(p.Meta.Hash)
}

// inplaceJob is one in-place reset, run outside the pool's lock.
type inplaceJob struct {
	slot    int
	admin   *sql.DB        // the slot's server's
	globals *serverGlobals // the slot's server's
	purge   *purgeWaker    // the slot's server's
	flavor  mariadb.Flavor // the slot's server's
	base    *inplaceBase
	pre     *handedOver     // the first steps, done by release --unchanged's check; nil: none
	accts   []account       // each database's last holder's
	dbs     []string        // the slot's databases, as accts
	files   fileMark        // the slot's files when it became ready
	dirs    []string        // slotDirs
	data    string          // the slot's clone
	src     string          // the pristine data directory to take tables from
	meta    *exportmeta.Set // the InnoDB tables' export metadata (exportmeta.go); nil: none
	// settle says the mark waits for InnoDB's purge (purge.go; marksRead).
	settle bool
	kinds  *tableKinds // the pool's
	// rows are the pool's template rows to write back
	// (mariadb.Changes.WriteBack); nil where the flavour imports instead.
	rows *rowCache
	// phases are the times the work's steps took, for the debug log.
	phases []string
}

// inplaceDone is what a successful in-place reset leaves.
type inplaceDone struct {
	accts   []account // the next holders', as inplaceJob.dbs
	mark    string
	files   fileMark
	base    *inplaceBase
	tables  int
	summary string
	// settled says InnoDB's purge was done when the mark was read (purge.go).
	settled bool
}

// run does the in-place reset's work on the slot's server.
func (j *inplaceJob) run(ctx context.Context) (*inplaceDone, error) {
	t0 := time.Now()
	lap := func(name string) {
		j.phases = append(j.phases, fmt.Sprintf("%s %.1f ms", name, float64(time.Since(t0).Microseconds())/1000))
		t0 = time.Now()
	}
	conn, err := j.admin.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("admin connection: %w", err)
	}
	defer conn.Close()
	// The admin's own statements move the non-row counters: each new
	// password below is one ALTER USER (Com_alter_user), taken off the
	// count; the restore's are in the next base (baseFrom); the check's
	// (j.pre) is in the base already. Its KILLs and SELECTs count apart.
	var own int64
	next := make([]account, len(j.accts))
	var commands map[string]string
	if j.pre != nil {
		next[0], commands = j.pre.acct, j.pre.status
	} else {
		for i, a := range j.accts {
			if !a.ok() {
				continue
			}
			if next[i], err = rekeyAccount(ctx, conn, a); err != nil {
				return nil, err
			}
			own++
		}
		if err := killOthers(ctx, conn, j.purge.spared()...); err != nil {
			return nil, notInPlace(FallbackSessions, "%v", err)
		}
		lap("new passwords and kill")
		if commands, err = mariadb.ReadStatus(ctx, conn, "GLOBAL", statusCounters[j.flavor]); err != nil {
			return nil, err
		}
	}
	other, err := sumOther(commands, j.flavor)
	if err != nil {
		return nil, err
	}
	if other-own != j.base.other {
		return nil, notInPlace(FallbackDDL, "DDL, account, routine, event, TRUNCATE or table maintenance statements ran (%d)", other-own-j.base.other)
	}
	if err := stillCounting(ctx, conn, j.flavor, j.base, commands); err != nil {
		return nil, err
	}
	lap("counters")
	if j.pre == nil { // the check found none, and nobody could make one since
		if n, err := xaPending(ctx, conn); err != nil {
			return nil, err
		} else if n > 0 {
			return nil, notInPlace(FallbackXA, "%d XA transaction(s) outlived their connections", n)
		}
	}
	// Temporary tables die with their connection: the server closes a
	// session's temporary tables (THD::cleanup) before the session leaves
	// the process list, which killOthers saw empty. Aria's and MyISAM's
	// temporary tables are files of the tmpdir, in the file walk below;
	// MariaDB 10.11 has no list of other sessions' InnoDB temporary
	// tables to check (information_schema.TEMPORARY_TABLES came in 11.2).
	if n, err := tempTables(ctx, conn, j.flavor); err != nil {
		return nil, err
	} else if n > 0 {
		return nil, notInPlace(FallbackTemp, "%d temporary table(s) outlived their connections", n)
	}
	lap("XA and temporary tables")
	// The global variables are hashed again only when a SET statement ran
	// since the base.
	globals := j.base.globals
	if sets := setCount(commands); sets < 0 || sets != j.base.sets {
		if globals, err = j.globals.hash(ctx, conn, j.dirs); err != nil {
			return nil, err
		}
		if globals != j.base.globals {
			return nil, notInPlace(FallbackGlobals, "the server's global variables changed")
		}
		lap("globals")
	}
	files, err := j.files.remark(j.dirs...)
	if err != nil {
		return nil, err
	}
	if d := j.files.diff(files, 5); len(d) > 0 {
		return nil, notInPlace(FallbackFiles, "files changed: %s", strings.Join(d, ", "))
	}
	lap("files")
	changed, writes, err := changedTables(ctx, conn, j.flavor, j.base)
	if err != nil {
		return nil, err
	}
	plan, err := planTables(ctx, conn, j.kinds, changed, writes)
	if err != nil {
		return nil, err
	}
	lap("changed tables")
	if j.src == "" && len(plan) > 0 {
		return nil, notInPlace(FallbackEngine, "no pristine data directory to take tables from")
	}
	if len(plan) > 0 {
		if _, err := conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 0"); err != nil {
			return nil, fmt.Errorf("foreign key checks off: %w", err)
		}
		for i, t := range plan {
			if err := j.restore(ctx, conn, t); err != nil {
				return nil, fmt.Errorf("restore %s: %w", t.ref, err)
			}
			if i == 0 && inplaceHook != nil {
				inplaceHook(j.slot)
			}
		}
		if _, err := conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 1"); err != nil {
			return nil, fmt.Errorf("foreign key checks on: %w", err)
		}
	}
	// The purge runs beside what follows; the mark waits for it.
	woke := j.settle && len(plan) > 0 && markSettles(j.flavor) && j.purge.wake()
	lap("restore")
	out := &inplaceDone{tables: len(plan), accts: next}
	made := false
	for i, a := range j.accts {
		if !a.ok() {
			if out.accts[i], err = newAccount(ctx, conn, j.dbs[i], len(j.dbs)); err != nil {
				return nil, err
			}
			made = true
		}
	}
	if made {
		lap("new account")
	}
	if woke {
		if out.settled, err = waitPurged(ctx, conn, j.flavor, purgeRounds, purgeEvery, false, nil); err != nil {
			return nil, err
		}
		lap("purge")
	}
	// One read of the counters for the mark and the base; the global
	// variables are the ones just checked (nothing here sets one). Where
	// no row changed, nothing was restored and no account made, the
	// reset's own statements since the first read wrote nothing: a mark
	// that counts statements (MySQL's; not MariaDB's log sequence number,
	// which InnoDB moves on its own) and the per-table counters are those
	// read then.
	same := len(changed) == 0 && !made && j.pre == nil && !markSettles(j.flavor)
	status := commands
	if !same {
		if status, err = mariadb.ReadStatus(ctx, conn, "GLOBAL", statusCounters[j.flavor]); err != nil {
			return nil, err
		}
	}
	counters, err := sumWrites(status, j.flavor)
	if err != nil {
		return nil, err
	}
	out.mark = strconv.FormatUint(counters, 10) + " " + globals
	lap("write mark")
	if out.files, err = files.restat(restoredFiles(j.data, plan)...); err != nil {
		return nil, err
	}
	lap("files again")
	if same {
		out.base, err = j.base.again(status, globals, j.flavor)
	} else {
		out.base, err = baseFrom(ctx, conn, j.flavor, j.base, status, globals)
	}
	if err != nil {
		return nil, err
	}
	lap("baseline")
	names := make([]string, len(plan))
	for i, t := range plan {
		names[i] = t.ref.String()
	}
	out.summary = fmt.Sprintf("%d table(s) restored %s", len(plan), strings.Join(names, ", "))
	return out, nil
}

// stillCounting fails with FallbackUncounted when the per-table row
// counters stopped counting every table's writes since the base (on
// MariaDB userstat is a global variable, hashed as well; MySQL's
// performance schema is set up by its own tables, which a lease cannot
// write: LeaseGrants), or missed a table (status, read at the reset, has
// the flavour's counters of counts missed).
func stillCounting(ctx context.Context, conn querier, f mariadb.Flavor, base *inplaceBase, status map[string]string) error {
	lost, err := lostCount(status, f)
	if err != nil {
		return err
	}
	if lost != base.lost {
		return notInPlace(FallbackUncounted, "the per-table row counters missed %d table(s) or handle(s)", lost-base.lost)
	}
	if why := notCounting(ctx, conn, f); why != "" {
		return notInPlace(FallbackUncounted, "%s", why)
	}
	return nil
}
