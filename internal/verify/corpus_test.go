package verify_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
	"github.com/pristinedb/pristine/internal/verify"
)

// The fidelity corpus: each folder of testdata/fidelity holds create.sql,
// run in database `app` of a live server (the source), and optionally
//
//	refuse_dbs_per_slot   lines the --dbs-per-slot refusal must contain
//	                      (one object each); without it that path must copy
//	                      exactly
//	expect_differences    lines "PATH KIND OBJECT PART" of differences every
//	                      copy made by PATH is known to have (documented in
//	                      docs/fidelity.md); any other difference fails
//	expect_known          lines "PATH KIND OBJECT PART" of the known
//	                      differences (Report.Known: re-owned DEFINERs,
//	                      reduced DEFINERs' global grants) every copy made
//	                      by PATH must show, and no other
//
// Every case goes through every path that makes a copy, and the copy is
// compared with the source by verify.Compare.
//
// The cases are in each server's dialect: testdata/fidelity for MariaDB,
// testdata/fidelity-mysql for MySQL (its own features: functional and
// multi-valued indexes, invisible columns, CHECK constraints, roles with
// a default role), chosen by the installed server.
const corpusDir = "../../testdata/fidelity"

// mysqlCorpusDir is MySQL's corpus.
const mysqlCorpusDir = "../../testdata/fidelity-mysql"

// corpusFor is the corpus of the installed server's dialect.
func corpusFor(t *testing.T) string {
	if mariadbtest.Binary(t).Flavor == mariadb.MySQL {
		return mysqlCorpusDir
	}
	return corpusDir
}

// corpusEnv is what the cases share: one store on /dev/shm and the client.
type corpusEnv struct {
	st     *template.Builder
	client string // the mariadb command-line client
	dump   string // mariadb-dump
}

func newCorpusEnv(t *testing.T) *corpusEnv {
	t.Helper()
	mariadbtest.Binary(t)
	e := &corpusEnv{}
	for _, p := range []struct {
		dst   *string
		names []string
	}{{&e.client, []string{"mariadb", "mysql"}}, {&e.dump, []string{"mariadb-dump", "mysqldump"}}} {
		for _, n := range p.names {
			if path, err := exec.LookPath(n); err == nil {
				*p.dst = path
				break
			}
		}
		if *p.dst == "" {
			t.Skipf("%s not installed: the corpus needs it to load sources and dump them (apt-get install mariadb-client)", p.names[0])
		}
	}
	e.st = templatetest.NewBuilder(t, "auto")
	return e
}

// fidelityCase is one folder of the corpus.
type fidelityCase struct {
	name, dir string
	refuse    []string            // substrings of the --dbs-per-slot refusal
	expect    map[string][]string // path -> "KIND OBJECT PART" lines
	known     map[string][]string // the same for known differences
}

func loadCases(t *testing.T, corpusDir string) []fidelityCase {
	ents, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []fidelityCase
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		c := fidelityCase{name: e.Name(), dir: filepath.Join(corpusDir, e.Name()), expect: map[string][]string{}}
		c.refuse = lines(t, filepath.Join(c.dir, "refuse_dbs_per_slot"))
		for _, l := range lines(t, filepath.Join(c.dir, "expect_differences")) {
			path, rest, _ := strings.Cut(l, " ")
			c.expect[path] = append(c.expect[path], rest)
		}
		c.known = map[string][]string{}
		for _, l := range lines(t, filepath.Join(c.dir, "expect_known")) {
			path, rest, _ := strings.Cut(l, " ")
			c.known[path] = append(c.known[path], rest)
		}
		out = append(out, c)
	}
	return out
}

// lines reads the non-empty, non-comment lines of a file that may not exist.
func lines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func TestFidelityCorpus(t *testing.T) {
	e := newCorpusEnv(t)
	dir := corpusFor(t)
	cases := loadCases(t, dir)
	if len(cases) == 0 {
		t.Fatal("no cases in " + dir)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { e.run(t, c) })
	}
}

func (e *corpusEnv) run(t *testing.T, c fidelityCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src := mariadbtest.Start(t)
	e.mysql(t, src, "", strings.NewReader("CREATE DATABASE app"))
	f, err := os.Open(filepath.Join(c.dir, "create.sql"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e.mysql(t, src, "app", f)
	srcDB := mariadbtest.Open(t, src, "")

	t.Run("clone", func(t *testing.T) {
		m := e.build(ctx, t, c.name, filepath.Join(c.dir, "create.sql"), 1)
		p, leases := e.pool(ctx, t, m, 1)
		defer p.Down(context.Background())
		db := leaseDB(t, leases[0], e.st.Catalog().Admin())
		defer db.Close()
		e.compare(ctx, t, c, "clone", srcDB, db, nil)
	})
	t.Run("page-compressed", func(t *testing.T) {
		pc, err := e.st.Binary().PageCompressionOptions()
		if err != nil {
			t.Skipf("no page-compressed templates on this server: %v", err)
		}
		opt := template.BuildOptions{Name: c.name + "-pc", FromSQL: filepath.Join(c.dir, "create.sql"), Database: "app", Profile: mariadb.DefaultProfile()}
		if opt.Profile.Options, err = mariadb.MergeOptions(opt.Profile.Options, pc); err != nil {
			t.Fatal(err)
		}
		m, _, err := e.st.Build(ctx, opt)
		if err != nil {
			t.Fatalf("template build --innodb-compression: %v", err)
		}
		p, leases := e.pool(ctx, t, m, 1)
		defer p.Down(context.Background())
		db := leaseDB(t, leases[0], e.st.Catalog().Admin())
		defer db.Close()
		e.compare(ctx, t, c, "page-compressed", srcDB, db, nil)

		// The same through a logical capture of the live source.
		opt.Name, opt.FromSQL = c.name+"-pc-logical", ""
		opt.Server = template.ServerSource{DSN: "mysql://root@localhost/?socket=" + src.Config.Socket(), Method: "logical"}
		if m, _, err = e.st.Build(ctx, opt); err != nil {
			t.Fatalf("template build --from-server --method logical --innodb-compression: %v", err)
		}
		e.compare(ctx, t, c, "page-compressed-logical", srcDB, e.started(ctx, t, m, "fidelity-"+c.name+"-pc-logical"), nil)
	})
	t.Run("dbs-per-slot", func(t *testing.T) {
		const k = 3
		opt := template.BuildOptions{Name: c.name + "-k", FromSQL: filepath.Join(c.dir, "create.sql"), Database: "app", DBsPerSlot: k, Profile: mariadb.DefaultProfile()}
		m, _, err := e.st.Build(ctx, opt)
		if len(c.refuse) > 0 {
			if !errors.Is(err, template.ErrNotCopyable) {
				t.Fatalf("--dbs-per-slot build = %v, want a refusal (ErrNotCopyable) naming %q", err, c.refuse)
			}
			for _, want := range c.refuse {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not name %s:\n%v", want, err)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("--dbs-per-slot build: %v", err)
		}
		p, leases := e.pool(ctx, t, m, k)
		defer p.Down(context.Background())
		others := userSchemas(t, srcDB, "app")
		for _, l := range leases {
			pairs := []verify.Pair{{Source: "app", Target: l.Database}}
			for _, s := range others {
				pairs = append(pairs, verify.Pair{Source: s, Target: s})
			}
			t.Run(l.Database, func(t *testing.T) {
				db := leaseDB(t, l, e.st.Catalog().Admin())
				defer db.Close()
				e.compare(ctx, t, c, "dbs-per-slot", srcDB, db, pairs)
			})
		}
	})
	t.Run("dump", func(t *testing.T) {
		dump := filepath.Join(t.TempDir(), "dump.sql")
		e.mysqldump(t, src, userSchemas(t, srcDB, ""), dump)
		m := e.build(ctx, t, c.name+"-dump", dump, 1)
		e.compare(ctx, t, c, "dump", srcDB, e.started(ctx, t, m, "fidelity-"+c.name), nil)
	})
	for _, method := range []string{"logical", "physical"} {
		t.Run("server-"+method, func(t *testing.T) {
			source := "mysql://root@localhost/?socket=" + src.Config.Socket()
			if method == "physical" && e.st.Binary().Flavor == mariadb.MySQL {
				source = cloneDonor(t, srcDB, src)
			}
			opt := template.BuildOptions{Name: c.name + "-" + method, Database: "app", Profile: mariadb.DefaultProfile(),
				Server: template.ServerSource{DSN: source, Method: method}}
			m, _, err := e.st.Build(ctx, opt)
			if err != nil {
				t.Fatalf("template build --from-server --method %s: %v", method, err)
			}
			e.compare(ctx, t, c, "server-"+method, srcDB, e.started(ctx, t, m, "fidelity-"+c.name+"-"+method), nil)
		})
	}
}

// cloneDonor readies a MySQL source for the clone plugin, as its
// administrator would: the plugin installed, and an account that logs in
// over TCP with BACKUP_ADMIN (and what a capture reads: SELECT, SHOW VIEW,
// the objects' definitions). It returns the URL to capture it by. The
// account has global privileges only, so it is the host's and out of any
// schema's account scope: verify does not compare it.
func cloneDonor(t *testing.T, db *sql.DB, in *mariadb.Instance) string {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone' AND PLUGIN_STATUS = 'ACTIVE'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		"CREATE USER IF NOT EXISTS cloner@'127.0.0.1' IDENTIFIED BY 'cloner-pw'",
		"GRANT BACKUP_ADMIN, SELECT, SHOW VIEW, EVENT, TRIGGER, RELOAD, PROCESS, REPLICATION CLIENT ON *.* TO cloner@'127.0.0.1'",
	}
	if n == 0 {
		stmts = append([]string{"INSTALL PLUGIN clone SONAME 'mysql_clone.so'"}, stmts...)
	}
	mariadbtest.Exec(t, db, stmts...)
	return fmt.Sprintf("mysql://cloner:cloner-pw@127.0.0.1:%d/", in.Config.Port)
}

func (e *corpusEnv) build(ctx context.Context, t *testing.T, name, sqlPath string, k int) *catalog.Meta {
	t.Helper()
	m, _, err := e.st.Build(ctx, template.BuildOptions{Name: name, FromSQL: sqlPath, Database: "app", DBsPerSlot: k, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatalf("template build %s: %v", name, err)
	}
	return m
}

// started starts a server on a clone of m, stopped when the test ends,
// and opens it as root.
func (e *corpusEnv) started(ctx context.Context, t *testing.T, m *catalog.Meta, name string) *sql.DB {
	t.Helper()
	r, err := e.st.Start(ctx, m, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	db, err := r.Inst.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// pool brings up a one-slot pool of m and leases n databases from it.
func (e *corpusEnv) pool(ctx context.Context, t *testing.T, m *catalog.Meta, n int) (*pool.Pool, []*pool.Lease) {
	t.Helper()
	p, err := pool.Up(ctx, e.st.Catalog(), e.st.Binary(), m, pool.Options{Size: 1, Parallel: 1, ResetWorkers: 1})
	if err != nil {
		t.Fatalf("pool up: %v", err)
	}
	var out []*pool.Lease
	for i := 0; i < n; i++ {
		l, err := p.Lease(ctx, pool.LeaseOptions{Holder: "fidelity"})
		if err != nil {
			p.Down(context.Background())
			t.Fatalf("lease %d: %v", i, err)
		}
		out = append(out, l)
	}
	return p, out
}

// leaseDB connects as root over the lease's slot socket: verify reads the
// whole server (other schemas, users), which a lease's account may not.
func leaseDB(t *testing.T, l *pool.Lease, secret string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn.Socket(l.Socket, "root", secret, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// compare runs verify and checks its differences against the case's
// expectations for path.
func (e *corpusEnv) compare(ctx context.Context, t *testing.T, c fidelityCase, path string, src, dst *sql.DB, pairs []verify.Pair) {
	t.Helper()
	if pairs == nil {
		var err error
		if pairs, err = verify.ResolvePairs(ctx, src, dst, "", "", nil); err != nil {
			t.Fatal(err)
		}
	}
	r, err := verify.Compare(ctx, verify.Side{DB: src, Label: "source"}, verify.Side{DB: dst, Label: path}, verify.Options{Pairs: pairs})
	if err != nil {
		t.Fatal(err)
	}
	if r.Objects["table"] == 0 {
		t.Fatalf("verify compared no tables: %+v", r.Objects)
	}
	// A page-compressed copy is a clone or a capture of a template whose
	// tables are page compressed.
	expectAs := map[string]string{"page-compressed": "clone", "page-compressed-logical": "server-logical"}[path]
	pageCompressed := expectAs != ""
	if !pageCompressed {
		expectAs = path
	}
	want := map[string]bool{}
	for _, w := range append(c.expect[expectAs], c.expect["all"]...) {
		want[w] = false
	}
	compressed := 0
	for _, d := range r.Diffs {
		if pageCompressed && pageCompressedOnly(d) {
			compressed++
			continue
		}
		key := d.Kind + " " + d.Object + " " + d.Part
		if _, ok := want[key]; ok {
			want[key] = true
			continue
		}
		t.Errorf("%s: %s %s: %s %s\n  source: %s\n  target: %s", path, d.Kind, d.Object, d.Part, d.Change, d.Source, d.Target)
	}
	for w, seen := range want {
		if !seen {
			t.Errorf("%s: expected difference %q did not show (fixed? update expect_differences and docs/fidelity.md)", path, w)
		}
	}
	if pageCompressed {
		if n := innodbTables(ctx, t, src, pairs); compressed != n {
			t.Errorf("%s: %d tables show PAGE_COMPRESSED as their only change, want every InnoDB table and sequence that names no other row format than DYNAMIC (%d)", path, compressed, n)
		}
	}
	for _, n := range r.Notes {
		t.Errorf("%s: not compared: %s", path, n)
	}
	known := map[string]bool{}
	for _, w := range append(c.known[expectAs], c.known["all"]...) {
		known[w] = false
	}
	for _, d := range r.Known {
		key := d.Kind + " " + d.Object + " " + d.Part
		if _, ok := known[key]; ok {
			known[key] = true
			continue
		}
		t.Errorf("%s: unexpected known difference: %s %s: %s\n  source: %s\n  target: %s", path, d.Kind, d.Object, d.Part, d.Source, d.Target)
	}
	for w, seen := range known {
		if !seen {
			t.Errorf("%s: known difference %q did not show (the build no longer re-owns or reduces it? update expect_known)", path, w)
		}
	}
	t.Logf("%s: %d differences, %d known, over %v in %.2fs", path, len(r.Diffs), len(r.Known), r.Objects, r.Seconds)
}

// mysql runs SQL through the mariadb client as root, as a person would,
// keeping comments in routine bodies as pristine's loader does (the client
// strips them unless told --comments).
func (e *corpusEnv) mysql(t *testing.T, in *mariadb.Instance, db string, sqlText interface{ Read([]byte) (int, error) }) {
	t.Helper()
	args := []string{"--no-defaults", "--default-character-set=utf8mb4", "--comments", "-S", in.Config.Socket(), "-uroot"}
	if db != "" {
		args = append(args, db)
	}
	cmd := exec.Command(e.client, args...)
	cmd.Stdin = sqlText
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("load the source: %v: %s", err, out)
	}
}

// mysqldump dumps schemas with their routines, triggers, events and the
// server's users, the way one moves a database to another server.
func (e *corpusEnv) mysqldump(t *testing.T, in *mariadb.Instance, schemas []string, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	args := append([]string{"--no-defaults", "-S", in.Config.Socket(), "-uroot", "--routines", "--triggers", "--events", "--databases"}, schemas...)
	cmd := exec.Command(e.dump, args...)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mariadb-dump: %v: %s", err, stderr.String())
	}
	if _, err := f.WriteString(accounts(t, mariadbtest.Open(t, in, ""))); err != nil {
		t.Fatal(err)
	}
}

// accounts prints the source's own accounts and roles with their grants, as
// pt-show-grants would (mariadb-dump --system=users also dumps accounts the
// server cannot name, such as root@<hostname> under --skip-name-resolve).
func accounts(t *testing.T, db *sql.DB) string {
	t.Helper()
	var create, grants []string
	// The system accounts (root@*, anonymous accounts...) are the host's;
	// an anonymous account on a host name cannot even be shown.
	q := "SELECT User, Host, is_role FROM mysql.user WHERE User NOT IN ('', 'root','mariadb.sys','mysql','PUBLIC') ORDER BY is_role DESC, User, Host"
	var v string
	if err := db.QueryRow("SELECT VERSION()").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ToLower(v), "mariadb") {
		// MySQL: a role is an account (one granted to another), shown by
		// SHOW CREATE USER like any, and made first (an account names it
		// as its DEFAULT ROLE); hashes as hex, which CREATE USER reads.
		db.SetMaxOpenConns(1)
		if _, err := db.Exec("SET SESSION print_identified_with_as_hex = ON"); err != nil {
			t.Fatal(err)
		}
		q = `SELECT User, Host, 'N' FROM mysql.user WHERE User NOT IN ('', 'root', 'mysql.sys', 'mysql.session', 'mysql.infoschema', 'cloner')
			ORDER BY (SELECT COUNT(*) FROM mysql.role_edges WHERE FROM_USER = User AND FROM_HOST = Host) DESC, User, Host`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	type acct struct{ name, role string }
	var all []acct
	for rows.Next() {
		var u, h, role string
		if err := rows.Scan(&u, &h, &role); err != nil {
			t.Fatal(err)
		}
		if role == "Y" {
			all = append(all, acct{"'" + u + "'", role})
		} else {
			all = append(all, acct{"'" + u + "'@'" + h + "'", role})
		}
	}
	rows.Close()
	for _, a := range all {
		if a.role == "Y" {
			create = append(create, "CREATE ROLE "+a.name)
		} else {
			var s string
			if err := db.QueryRow("SHOW CREATE USER " + a.name).Scan(&s); err != nil {
				t.Fatal(err)
			}
			create = append(create, s)
		}
		rows, err := db.Query("SHOW GRANTS FOR " + a.name)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				t.Fatal(err)
			}
			grants = append(grants, g)
		}
		rows.Close()
	}
	return "\n-- accounts\n" + strings.Join(append(create, grants...), ";\n") + ";\n"
}

// userSchemas lists the non-system schemas of a server but except.
func userSchemas(t *testing.T, db *sql.DB, except string) []string {
	t.Helper()
	rows, err := db.Query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('mysql','information_schema','performance_schema','sys') ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s != except {
			out = append(out, s)
		}
	}
	return out
}

// pageCompressedOnly reports whether d is what a page-compressed template
// shows its tests (docs/storage.md): a table's options, or a sequence's
// definition, that gained `PAGE_COMPRESSED`='ON' and nothing else.
func pageCompressedOnly(d verify.Diff) bool {
	const opt = "`PAGE_COMPRESSED`='ON'"
	part := d.Kind == "table" && d.Part == "options" || d.Kind == "sequence" && d.Part == "create table"
	if !part || d.Change != verify.Differs || !strings.Contains(d.Target, opt) {
		return false
	}
	return strings.Join(strings.Fields(strings.Replace(d.Target, opt, "", 1)), " ") == strings.Join(strings.Fields(d.Source), " ")
}

// innodbTables counts the source's InnoDB tables and sequences in the
// compared schemas whose definition names no row format the load keeps
// uncompressed (sqlload: COMPACT, REDUNDANT, COMPRESSED, KEY_BLOCK_SIZE).
func innodbTables(ctx context.Context, t *testing.T, src *sql.DB, pairs []verify.Pair) int {
	t.Helper()
	n := 0
	for _, p := range pairs {
		var k int
		if err := src.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND ENGINE = 'InnoDB' AND TABLE_TYPE IN ('BASE TABLE', 'SEQUENCE') AND UPPER(CREATE_OPTIONS) NOT REGEXP 'ROW_FORMAT=(COMPACT|REDUNDANT|COMPRESSED)|KEY_BLOCK_SIZE'", p.Source).Scan(&k); err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}
