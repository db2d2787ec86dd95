package verify_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/verify"
)

// TestSakila builds a template from MySQL's Sakila sample database (views,
// triggers, routines, FULLTEXT and SPATIAL indexes), the way a new user
// would, and verifies a clone of it against a server loaded with the same
// files. No package registry reachable from CI ships Sakila, so the files
// come from $PRISTINE_SAKILA_DIR (sakila-schema.sql and sakila-data.sql).
func TestSakila(t *testing.T) {
	dir := os.Getenv("PRISTINE_SAKILA_DIR")
	if dir == "" {
		t.Skip("Sakila is not shipped by a package registry reachable here: set PRISTINE_SAKILA_DIR to a directory holding sakila-schema.sql and sakila-data.sql to run this test")
	}
	e := newCorpusEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The schema must load before the data: name the copies so they sort.
	in := t.TempDir()
	for i, f := range []string{"sakila-schema.sql", "sakila-data.sql"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("PRISTINE_SAKILA_DIR: %v", err)
		}
		if err := os.WriteFile(filepath.Join(in, string(rune('1'+i))+"-"+f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := mariadbtest.Start(t)
	for _, f := range []string{"sakila-schema.sql", "sakila-data.sql"} {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		e.mysql(t, src, "", fh)
		fh.Close()
	}
	srcDB := mariadbtest.Open(t, src, "")
	m, _, err := e.st.Build(ctx, template.BuildOptions{Name: "sakila", FromSQL: in, Database: "sakila", Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatalf("template build sakila: %v", err)
	}
	p, leases := e.pool(ctx, t, m, 1)
	defer p.Down(context.Background())
	db := leaseDB(t, leases[0], e.st.Catalog().Admin())
	defer db.Close()
	r, err := verify.Compare(ctx, verify.Side{DB: srcDB, Label: "source"}, verify.Side{DB: db, Label: "clone"}, verify.Options{Pairs: []verify.Pair{{Source: "sakila", Target: "sakila"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() || r.Objects["view"] == 0 || r.Objects["trigger"] == 0 {
		t.Errorf("a clone of Sakila is not Sakila:\n%s", text(t, r))
	}
	t.Logf("sakila: %v compared in %.2fs", r.Objects, r.Seconds)
	_, _, err = e.st.Build(ctx, template.BuildOptions{Name: "sakila-k", FromSQL: in, Database: "sakila", DBsPerSlot: 2, Profile: mariadb.DefaultProfile()})
	if !errors.Is(err, template.ErrNotCopyable) || !strings.Contains(err.Error(), "view `sakila`.`actor_info`") {
		t.Errorf("--dbs-per-slot with Sakila's views = %v, want a refusal naming them", err)
	}
}
