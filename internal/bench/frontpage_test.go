package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/demorun"
	"github.com/pristinedb/pristine/internal/stats"
)

// TestFrontPageBlocks: a block's markers are found once, it is rewritten
// from its saved run with the text around it kept, and CheckBlock fails,
// naming the line and the fix, when one figure in it is changed by hand.
func TestFrontPageBlocks(t *testing.T) {
	repo := t.TempDir()
	run := demorun.DemoResult{
		Started: time.Date(2026, 11, 27, 21, 46, 0, 0, time.UTC), Machine: stats.Host{CPU: "Test CPU", Cores: 2, MemoryGiB: 23.5, Kernel: "6.1"},
		Pristine: "v1 (commit abc)", Backend: "btrfs", Server: "10.11.19-MariaDB", Slots: 200, PoolUpSeconds: 20, FirstLeaseSeconds: 0.8, ResetP50MS: 60, ResetP99MS: 300,
		DumpLoadSeconds: 5, DumpLoad200Proj: 1000, SpeedupVsDumpLd: 50, LoadBefore: "3.00 2.00 1.00", LoadAfter: "9.00 4.00 2.00",
		Runs: []demorun.PoolRun{{State: "cold", PoolUpSeconds: 20, FirstLeaseSeconds: 0.8, LoadBefore: "3.00 2.00 1.00", LoadAfter: "9.00 4.00 2.00"}},
	}
	write := func(rel, s string) {
		t.Helper()
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	js, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	write("docs/runs/r.json", string(js))
	write("README.md", "# x\n\nbefore\n\n"+beginLine(ReadmeBlock, []string{"docs/runs/old.json"})+"stale\n"+endLine(ReadmeBlock)+"\nafter\n")
	write("docs/benchmarks.md", "# B\n\n"+beginLine(SummaryBlock, []string{"docs/runs/old.json"})+endLine(SummaryBlock)+"\nhistory\n")

	if err := CheckBlock(repo, ReadmeBlock); err == nil {
		t.Fatal("CheckBlock passed a block that names a missing run")
	}
	if err := WriteFrontPage(repo, "docs/runs/r.json"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ReadmeBlock, SummaryBlock} {
		if err := CheckBlock(repo, name); err != nil {
			t.Errorf("%s, just written: %v", name, err)
		}
	}
	readme, _ := os.ReadFile(filepath.Join(repo, "README.md"))
	for _, want := range []string{"before\n\n<!-- BEGIN readme-sample from docs/runs/r.json:", "\nafter\n", "Test CPU, 2 cores, 23.5 GiB", "2026-11-27 21:46", "Other work shared the machine", "| 1 | cold | 0.80 s | 20.00 s |", "| first lease, asked for with the pool-up (median of 1) | 0.80 s |"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md lacks %q:\n%s", want, readme)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(repo, "docs/benchmarks.md"))
	for _, want := range []string{"| pristine slots through the daemon, 200 of the demo template (thin btrfs, 1 db/slot) | 20.0 s | 10.0 | 0.80 s (asked for with the pool-up) | 60 / 300 ms", "**projected** 1000 s", "\nhistory\n"} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("benchmarks.md lacks %q:\n%s", want, sum)
		}
	}

	// A figure edited by hand fails the check, naming the line and the fix.
	write("README.md", strings.Replace(string(readme), "| 1 | cold | 0.80 s | 20.00 s |", "| 1 | cold | 0.80 s | 2.00 s |", 1))
	err = CheckBlock(repo, ReadmeBlock)
	if err == nil || !strings.Contains(err.Error(), "| 1 | cold | 0.80 s | 2.00 s |") || !strings.Contains(err.Error(), "scripts/readme-sample.sh --from docs/runs/r.json") {
		t.Errorf("CheckBlock of a hand-edited README = %v; want a failure naming the line and the fix", err)
	}
}

func TestFindBlockRefusesTwoBlocks(t *testing.T) {
	b := beginLine(ReadmeBlock, []string{"docs/runs/a.json"}) + endLine(ReadmeBlock)
	if _, err := FindBlock(b+b, ReadmeBlock); err == nil {
		t.Error("FindBlock accepted two blocks of one name")
	}
	if _, err := FindBlock("text", ReadmeBlock); err == nil {
		t.Error("FindBlock accepted a document with no block")
	}
}
