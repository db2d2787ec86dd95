package verify_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/verify"
)

// TestAccountsInScope checks which accounts verify compares: those of the
// compared schemas (definers, privilege holders, their roles), not the
// system accounts nor accounts of other schemas or with global privileges
// only; --all-users widens it to every account but the system's. And an
// account a server cannot show (in its grant tables, not in its privilege
// cache: SHOW CREATE USER fails) is a reported difference with a note,
// never an error that stops the comparison.
func TestAccountsInScope(t *testing.T) {
	mariadbtest.SkipOnMySQL(t, "it edits MariaDB's mysql.global_priv; MySQL's account scope (a role, a default role, a table grant) is checked by TestFidelityCorpus/mysql-features")
	e := newCorpusEnv(t)
	src, dst := mariadbtest.Start(t), mariadbtest.Start(t)
	setup := `CREATE DATABASE app; CREATE DATABASE other;
CREATE TABLE app.t (id INT PRIMARY KEY); CREATE TABLE other.t (id INT PRIMARY KEY);
CREATE USER ''@'localhost'; CREATE USER 'root'@'fidelity-host';
CREATE USER admin@'%'; GRANT ALL ON *.* TO admin@'%';
CREATE USER elsewhere@'%'; GRANT SELECT ON other.* TO elsewhere@'%';
CREATE ROLE rw; GRANT INSERT ON *.* TO rw;
CREATE USER app_user@'%'; GRANT SELECT ON app.t TO app_user@'%'; GRANT SELECT ON other.* TO app_user@'%'; GRANT rw TO app_user@'%';
CREATE USER owner@localhost; CREATE DEFINER=owner@localhost VIEW app.v AS SELECT id FROM app.t;
`
	e.mysql(t, src, "", strings.NewReader(setup))
	// The target differs only outside the scope, and in one account the
	// server cannot show.
	e.mysql(t, dst, "", strings.NewReader(setup+`
DROP USER ''@'localhost'; DROP USER admin@'%'; GRANT SELECT ON other.t TO elsewhere@'%'; GRANT DELETE ON other.* TO app_user@'%';
INSERT INTO mysql.global_priv (Host, User, Priv) VALUES ('%', 'ghost', '{}');
INSERT INTO mysql.db (Host, Db, User, Select_priv) VALUES ('%', 'app', 'ghost', 'Y');
`))
	ctx := context.Background()
	pairs := []verify.Pair{{Source: "app", Target: "app"}}
	run := func(opt verify.Options) *verify.Report {
		opt.Pairs = pairs
		r, err := verify.Compare(ctx, verify.Side{DB: mariadbtest.Open(t, src, ""), Label: "source"}, verify.Side{DB: mariadbtest.Open(t, dst, ""), Label: "target"}, opt)
		if err != nil {
			t.Fatalf("verify stopped on an account it cannot read: %v", err)
		}
		return r
	}
	diffs := func(r *verify.Report) string {
		var out []string
		for _, d := range r.Diffs {
			out = append(out, d.Kind+" "+d.Object+" "+d.Part+" "+string(d.Change))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}

	r := run(verify.Options{})
	if got, want := diffs(r), "user 'ghost'@'%'  extra"; got != want {
		t.Errorf("differences in scope of app:\n%s\nwant:\n%s", got, want)
	}
	if r.Objects["user"] != 3 || r.Objects["role"] != 1 {
		t.Errorf("compared %v: want 3 users (app_user, owner, ghost) and 1 role (rw)", r.Objects)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "'ghost'@'%': SHOW CREATE USER failed") {
		t.Errorf("notes %q: want one saying ghost could not be shown", r.Notes)
	}
	var ghost string
	for _, d := range r.Diffs {
		ghost = d.Target
	}
	if !strings.Contains(ghost, "mysql.global_priv") {
		t.Errorf("the unreadable account is not shown by its mysql.global_priv row: %s", ghost)
	}

	// Every account but the system's: the differences outside the scope
	// show, the anonymous and root accounts still do not.
	r = run(verify.Options{AllUsers: true})
	got := diffs(r)
	for _, want := range []string{"user 'admin'@'%'  missing", "user 'elsewhere'@'%' grant on `other`.`t` extra", "user 'app_user'@'%' grant on `other`.* differs", "user 'ghost'@'%'  extra"} {
		if !strings.Contains(got, want) {
			t.Errorf("--all-users: %q not reported in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "''") || strings.Contains(got, "root") {
		t.Errorf("--all-users compared a system account:\n%s", got)
	}
}
