package buildbench_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/bench/buildbench"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

func TestMigrations(t *testing.T) {
	sql := buildbench.Migrations(4)
	for _, c := range []struct {
		what string
		want int
	}{{"CREATE TABLE", 4}, {"ADD COLUMN", 4}, {"ADD INDEX", 4}, {"FOREIGN KEY", 3}} {
		if got := strings.Count(sql, c.what); got != c.want {
			t.Errorf("Migrations(4): %d %q, want %d", got, c.what, c.want)
		}
	}
}

// A small run measures every row against the stock server and leaves no
// template behind.
func TestRunSmall(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	rep, err := buildbench.Run(context.Background(), st, buildbench.Options{Runs: 1, DemoScale: 0.01, Migrations: 5, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 8 {
		t.Fatalf("%d rows, want 8 (2 workloads x 4 methods)", len(rep.Results))
	}
	for i, r := range rep.Results {
		if r.Seconds <= 0 || (i%4 > 0) != (r.Ratio > 0) {
			t.Errorf("row %+v: want a time, and a ratio except on the stock row", r)
		}
	}
	// The first lease comes after the build it was served from.
	if build, lease := rep.Results[1], rep.Results[2]; lease.Runs[0] <= build.Runs[0] {
		t.Errorf("to the first lease %v s, the build alone %v s: want more", lease.Runs, build.Runs)
	}
	// The timeline names every phase from the key to the first lease.
	seen := map[string]bool{}
	for _, p := range rep.Phases {
		seen[p.Workload+"/"+p.Phase] = true
	}
	for _, ph := range []string{template.PhaseKey, template.PhaseRAMCopy, template.PhaseStart, template.PhaseLoad, template.PhaseStop, template.PhaseFile, template.PhasePoolUp, template.PhaseLease} {
		if !seen["migrate/"+ph] {
			t.Errorf("no phase %q in the migrate timeline: %+v", ph, rep.Phases)
		}
	}
	var md strings.Builder
	if err := buildbench.Markdown(&md, rep); err != nil || !strings.Contains(md.String(), "| migrate | stock mariadbd") {
		t.Errorf("markdown: %v\n%s", err, md.String())
	}
	if all, _ := st.Catalog().List(); len(all) != 0 {
		t.Errorf("%d templates left, want none", len(all))
	}
}
