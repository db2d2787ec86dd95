package bench

import (
	"context"
	"database/sql"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/demorun"
	"github.com/pristinedb/pristine/internal/quote"

	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/template"
)

// newStore opens a store in a fresh root on /dev/shm (tmpfs: the copy
// backend), so builds are fast.
func newStore(t *testing.T) *template.Builder {
	t.Helper()
	mariadbtest.Binary(t)
	dir, err := mariadbtest.TempDir("/dev/shm", "pristine-bench-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mariadb.KillOrphans(dir)
		os.RemoveAll(dir)
	})
	root, err := rootdir.Open(filepath.Join(dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := template.Open(context.Background(), root, "auto")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

var tiny = Workload{Name: "tiny", Demo: demo.Options{Scale: 0.02, Tables: 12}}

// TestCopiersMakeFaithfulCopies runs each in-server method once and
// compares the copy with its source: every table's checksum and every
// index and foreign key.
func TestCopiersMakeFaithfulCopies(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	r := &runner{store: st, opt: CompareOptions{}}
	m, err := r.buildTemplate(ctx, tiny, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    copier
	}{
		{"dumpload", &dumpLoader{workers: 1}},
		{"myloader", &myLoader{workers: 2}},
		{"import", &importer{}},
		{"import-noidx", &importer{noIdx: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := st.Start(ctx, m, "test-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			scratch := t.TempDir()
			if err := tc.c.setup(ctx, srv, scratch); err != nil {
				t.Fatal(err)
			}
			if err := tc.c.copy(ctx, 1); err != nil {
				t.Fatal(err)
			}
			db, err := srv.Inst.Open("")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			want, got := fingerprint(t, db, m.Database()), fingerprint(t, db, "copy1")
			if len(want) < 12 {
				t.Fatalf("source fingerprint has %d entries, want at least one per table", len(want))
			}
			if diff := compareLists(want, got); diff != "" {
				t.Errorf("copy1 differs from %s: %s", m.Database(), diff)
			}
		})
	}
}

// fingerprint lists a schema's tables with their checksums, indexes and
// foreign keys, sorted.
func fingerprint(t *testing.T, db *sql.DB, schema string) []string {
	t.Helper()
	var out []string
	q := func(query string, args ...any) {
		rows, err := db.Query(query, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, v := range vals {
				parts = append(parts, v.String)
			}
			out = append(out, strings.Join(parts, " "))
		}
	}
	q("SELECT CONCAT('index ', TABLE_NAME, '.', INDEX_NAME), NON_UNIQUE, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA=? GROUP BY TABLE_NAME, INDEX_NAME, NON_UNIQUE", schema)
	q("SELECT CONCAT('fk ', TABLE_NAME, '.', CONSTRAINT_NAME), REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA=?", schema)
	tables, _, err := template.ShowCreateTables(context.Background(), db, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		var name string
		var sum sql.NullInt64
		if err := db.QueryRow("CHECKSUM TABLE "+quote.Ident(schema)+"."+quote.Ident(tb)).Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("checksum %s %d", tb, sum.Int64))
	}
	sort.Strings(out)
	return out
}

func compareLists(want, got []string) string {
	w, g := map[string]bool{}, map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	for _, s := range got {
		g[s] = true
	}
	var diff []string
	for _, s := range want {
		if !g[s] {
			diff = append(diff, "missing "+s)
		}
	}
	for _, s := range got {
		if !w[s] {
			diff = append(diff, "extra "+s)
		}
	}
	return strings.Join(diff, "; ")
}

// TestCompareWritesEveryRow runs a small bench end to end on the copy
// backend and checks the rows, the budget's projections, the JSON, the
// charts and the document.
func TestCompareWritesEveryRow(t *testing.T) {
	st := newStore(t)
	opt := CompareOptions{Workloads: []Workload{tiny}, Copies: []int{1, 2}, Workers: 2, DBsPerSlot: []int{1, 2},
		Methods: []string{MethodDumpLoad, MethodImport, MethodThin}, MaxTime: time.Minute,
		Service: true, ServiceScale: 0.03, ServiceSlots: 2, Resets: 2}
	rep, err := Compare(context.Background(), st, opt)
	if err != nil {
		t.Fatal(err)
	}
	// dumpload serial and x2, import, thin copy K=1 and K=2: 5 variants x 2 counts.
	if len(rep.Rows) != 10 {
		t.Fatalf("got %d rows, want 10: %+v", len(rep.Rows), rep.Rows)
	}
	for _, row := range rep.Rows {
		if row.Error != "" || row.Seconds <= 0 || row.Projected {
			t.Errorf("row %s x%d: error %q, seconds %v, projected %v", row.Label(), row.Copies, row.Error, row.Seconds, row.Projected)
		}
		if row.Method == MethodThin && (row.Backend == "" || row.DBsPerSlot == 0) {
			t.Errorf("thin row without backend or dbs_per_slot: %+v", row)
		}
	}
	// Of the 2 slots' leases one is timed as a lease of a ready slot: the
	// other is the first lease, asked for with the pool-up (PoolRun).
	if len(rep.Service) != 2 || rep.Service[0].Error != "" || rep.Service[1].Error != "" || rep.Service[0].Leases != 1 || rep.Service[1].Resets != 2 {
		t.Errorf("service rows: %+v", rep.Service)
	}
	// Three pool-ups (the default), each with its load average and the
	// resets of every slot at once; the first follows the thin rows' pools
	// on the same filesystem, so it is warm.
	if runs := rep.Service[0].Runs; len(runs) != 3 || runs[0].State != "warm" || runs[0].FirstLeaseSeconds <= 0 || rep.Service[0].PSSMeanMB <= 0 || rep.Service[0].AllResetP99MS <= 0 {
		t.Errorf("service runs: %+v, PSS %v, reset p99 of all at once %v", runs, rep.Service[0].PSSMeanMB, rep.Service[0].AllResetP99MS)
	}
	for i, run := range rep.Service[0].Runs {
		if run.PoolUpSeconds <= 0 || run.LoadBefore == "" || run.LoadAfter == "" {
			t.Errorf("service run %d: %+v", i+1, run)
		}
	}
	if left := mariadb.Servers(st.Catalog().Root().Data()); len(left) > 0 {
		t.Errorf("servers left running: %v", left)
	}
	if all, _ := st.Catalog().List(); len(all) > 0 {
		t.Errorf("templates left: %d", len(all))
	}

	dir := t.TempDir()
	if err := Save(dir, rep); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"copies-tiny.png", "reset.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 500 {
			t.Errorf("%s: %v", name, err)
		}
	}
	back, err := Load(filepath.Join(dir, "bench.json"))
	if err != nil || len(back.Rows) != len(rep.Rows) {
		t.Fatalf("load: %v, %d rows", err, len(back.Rows))
	}
	var doc strings.Builder
	docs := filepath.Join(t.TempDir(), "docs", "bench")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, SlotStartFile), []byte("## Where a slot's start goes\n\nmeasured apart\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Document(&doc, []*Report{back}, []string{filepath.Join(docs, "x", "bench.json")}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"thin copy, 1 db/slot", "baseline", "copies-tiny.png", "Reset of a released slot",
		"PSS per instance", "every slot at once", "| 3 | warm |", "## Where a slot's start goes\n\nmeasured apart\n"} {
		if !strings.Contains(doc.String(), want) {
			t.Errorf("document lacks %q", want)
		}
	}
}

// TestDumpLoadStopsWhenCancelled checks that a copy cut short by its
// context returns (an io.Pipe between the clients used to hang here).
func TestDumpLoadStopsWhenCancelled(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	r := &runner{store: st, opt: CompareOptions{}}
	m, err := r.buildTemplate(ctx, Workload{Name: "cancel", Demo: demo.Options{Scale: 0.2}}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := st.Start(ctx, m, "cancel")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := demorun.DumpLoadEnv(cctx, srv.Inst, m.Database(), "copy1", nil); err == nil {
		t.Fatal("a copy cancelled after 100 ms succeeded; want an error")
	}
}
