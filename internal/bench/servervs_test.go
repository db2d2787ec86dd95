package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/demorun"
)

func TestCompareServers(t *testing.T) {
	mysql := ServerRun{Demo: demorun.DemoResult{Server: "9.7.4", Slots: 200, PoolUpSeconds: 90, ResetP50MS: 80,
		Runs: []demorun.PoolRun{{State: "cold", PoolUpSeconds: 100}, {State: "warm", PoolUpSeconds: 90}}},
		Soak: &SoakResult{FreshPerSec: 4, SteadyPerSec: 3.5}}
	maria := ServerRun{Demo: demorun.DemoResult{Server: "10.11.19-MariaDB", Slots: 200, PoolUpSeconds: 25, ResetP50MS: 25,
		Runs: []demorun.PoolRun{{State: "cold", PoolUpSeconds: 26}, {State: "warm", PoolUpSeconds: 25}}},
		Soak: &SoakResult{FreshPerSec: 16, SteadyPerSec: 15}}
	got := map[string]VsRow{}
	for _, r := range CompareServers(mysql, maria) {
		got[r.What] = r
	}
	for _, tc := range []struct {
		what  string
		ratio float64
		met   bool
	}{
		{"databases ready, cold (s)", 100.0 / 26, false},
		{"databases ready, warm (s)", 90.0 / 25, false},
		{"reset p50 (ms)", 80.0 / 25, false},
		{"soak: fresh copies/s", 4.0 / 16, true},
		{"soak: fresh copies/s, second half", 3.5 / 15, false},
	} {
		r, ok := got[tc.what]
		if !ok {
			t.Errorf("%s: missing", tc.what)
			continue
		}
		if d := r.Ratio - tc.ratio; d > 1e-9 || d < -1e-9 || r.Met != tc.met {
			t.Errorf("%s: ratio %.3f met %v, want %.3f met %v", tc.what, r.Ratio, r.Met, tc.ratio, tc.met)
		}
	}
	if _, ok := got["lease p50 (ms)"]; ok {
		t.Errorf("a figure neither side has is listed")
	}
	maria.Demo.Runs = maria.Demo.Runs[:1]
	for _, r := range CompareServers(mysql, maria) {
		if r.What == "databases ready, warm (s)" {
			t.Errorf("a warm figure is listed for a side that had no warm run: %+v", r)
		}
	}
	maria.Demo.Runs = append(maria.Demo.Runs, demorun.PoolRun{State: "warm", PoolUpSeconds: 25})
	mysql.Soak.SteadyPerSec, mysql.Demo.ResetP50MS = 10, 40
	for _, r := range CompareServers(mysql, maria) {
		if (r.What == "soak: fresh copies/s, second half" || r.What == "reset p50 (ms)") && !r.Met {
			t.Errorf("%s: ratio %.2f within its bound, reported missed", r.What, r.Ratio)
		}
	}
	var out bytes.Buffer
	if err := WriteServerVs(&out, "mysql-9.7", "host", mysql, maria, CompareServers(mysql, maria)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| databases ready, warm (s) | 90.0 | 25.0 | 3.60x | <= 3.0x (missed) |") {
		t.Errorf("table:\n%s", out.String())
	}
	// 200 databases in 25 slots of 8 beside 200 slots: the reset of a
	// slot of 8 has no bound, the header says how the databases were held.
	mysql.Demo.DBsPerSlot, mysql.Demo.Servers, mysql.Demo.ResetP50MS = 8, 25, 100
	for _, r := range CompareServers(mysql, maria) {
		if r.What == "reset p50 (ms)" && (r.Max != 0 || !r.Met) {
			t.Errorf("the reset of a slot of 8 databases is held to a bound beside one of 1: %+v", r)
		}
	}
	out.Reset()
	if err := WriteServerVs(&out, "mysql-9.7", "host", mysql, maria, CompareServers(mysql, maria)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "mysql-9.7: 9.7.4, 200 databases in 25 slots of 8;") || !strings.Contains(out.String(), "host: 10.11.19-MariaDB, 200 slots;") {
		t.Errorf("header:\n%s", out.String())
	}
}

func TestReadServerRunWithoutSoak(t *testing.T) {
	dir := t.TempDir()
	b, _ := json.Marshal(demorun.DemoResult{Server: "x", PoolUpSeconds: 1})
	if err := os.WriteFile(filepath.Join(dir, "demo.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadServerRun(dir)
	if err != nil || r.Soak != nil || r.Demo.PoolUpSeconds != 1 {
		t.Fatalf("ReadServerRun = %+v, %v; want the demo and no soak", r, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadServerRun(dir); err == nil || !strings.Contains(err.Error(), "soak.json") {
		t.Fatalf("a broken soak.json: err %v, want it named", err)
	}
}
