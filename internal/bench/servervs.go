package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/demorun"
)

// ServerRun is one server's side of a comparison of two servers on one
// machine in one run (scripts/bench-servers.sh --vs): what `pristine demo
// --json` printed, and, when a soak followed, what `pristine-bench soak
// --json` printed.
type ServerRun struct {
	Demo demorun.DemoResult
	Soak *SoakResult // nil: no soak ran
}

// ReadServerRun reads a side of a comparison from dir: demo.json, and
// soak.json when it exists.
func ReadServerRun(dir string) (ServerRun, error) {
	var r ServerRun
	if err := readJSON(filepath.Join(dir, "demo.json"), &r.Demo); err != nil {
		return r, err
	}
	var s SoakResult
	switch err := readJSON(filepath.Join(dir, "soak.json"), &s); {
	case err == nil:
		r.Soak = &s
	case !errors.Is(err, fs.ErrNotExist):
		return r, err
	}
	return r, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// VsRow is one figure of two servers side by side: A's, B's, A/B, and the
// bound A/B must keep, when there is one.
type VsRow struct {
	What  string
	A, B  float64
	Ratio float64
	// Max and Min bound the ratio (0: no bound); Met says whether it
	// holds.
	Max, Min float64
	Met      bool
}

// CompareServers lines up the figures of two servers' runs, A against B,
// with the bounds of the MySQL parity targets (A MySQL, B MariaDB): 200
// leases ready within 3x (as many databases, either side with any number
// per slot: --dbs-per-slot), the reset's p50 within 2x, fresh copies per
// second at least 0.6x over the soak's second half (SteadyPerSec: the
// databases ready at the start, more with more per slot, are spent by
// then), the reset's bound only where both sides hold as many databases
// per slot. A figure either side lacks (0) is left out.
func CompareServers(a, b ServerRun) []VsRow {
	// A reset of a slot of several databases restores them all: beside a
	// slot of another number it has no bound.
	resetBound := 2.0
	if max(a.Demo.DBsPerSlot, 1) != max(b.Demo.DBsPerSlot, 1) {
		resetBound = 0
	}
	rows := []VsRow{
		{What: "databases ready, cold (s)", A: upIn(a.Demo, "cold"), B: upIn(b.Demo, "cold"), Max: 3},
		{What: "databases ready, warm (s)", A: upIn(a.Demo, "warm"), B: upIn(b.Demo, "warm"), Max: 3},
		{What: "first lease (s)", A: a.Demo.FirstLeaseSeconds, B: b.Demo.FirstLeaseSeconds},
		{What: "reset p50 (ms)", A: a.Demo.ResetP50MS, B: b.Demo.ResetP50MS, Max: resetBound},
		{What: "reset p99 (ms)", A: a.Demo.ResetP99MS, B: b.Demo.ResetP99MS},
		{What: "lease p50 (ms)", A: a.Demo.LeaseP50MS, B: b.Demo.LeaseP50MS},
		{What: "start CPU per slot (ms)", A: a.Demo.StartCPUMS, B: b.Demo.StartCPUMS},
		{What: "idle CPU per slot (ms/s)", A: a.Demo.IdleCPUMSPerSec, B: b.Demo.IdleCPUMSPerSec},
		{What: "memory per slot, PSS (MB)", A: a.Demo.PSSMeanMB, B: b.Demo.PSSMeanMB},
	}
	if a.Soak != nil && b.Soak != nil {
		rows = append(rows,
			VsRow{What: "soak: fresh copies/s", A: a.Soak.FreshPerSec, B: b.Soak.FreshPerSec},
			VsRow{What: "soak: fresh copies/s, second half", A: a.Soak.SteadyPerSec, B: b.Soak.SteadyPerSec, Min: 0.6},
			VsRow{What: "soak: reset p50 (ms)", A: a.Soak.ResetP50MS, B: b.Soak.ResetP50MS},
			VsRow{What: "soak: pristine CPU per reset (ms)", A: a.Soak.PristineCPUPerResetMS, B: b.Soak.PristineCPUPerResetMS})
	}
	out := rows[:0]
	for _, r := range rows {
		if r.A <= 0 || r.B <= 0 {
			continue
		}
		r.Ratio = r.A / r.B
		r.Met = (r.Max == 0 || r.Ratio <= r.Max) && (r.Min == 0 || r.Ratio >= r.Min)
		out = append(out, r)
	}
	return out
}

// upIn is the time to ready slots of the demo's last run in state
// ("cold" or "warm"), 0 when it had none.
func upIn(d demorun.DemoResult, state string) float64 {
	up := 0.0
	for _, r := range d.Runs {
		if r.State == state {
			up = r.PoolUpSeconds
		}
	}
	return up
}

// WriteServerVs prints rows as a Markdown table, nameA and nameB heading
// the sides, and after it every bound missed.
func WriteServerVs(w io.Writer, nameA, nameB string, a, b ServerRun, rows []VsRow) error {
	fmt.Fprintf(w, "%s: %s, %s; load %s -> %s\n", nameA, a.Demo.Server, databases(a.Demo), a.Demo.LoadBefore, a.Demo.LoadAfter)
	fmt.Fprintf(w, "%s: %s, %s; load %s -> %s\n\n", nameB, b.Demo.Server, databases(b.Demo), b.Demo.LoadBefore, b.Demo.LoadAfter)
	fmt.Fprintf(w, "| | %s | %s | %s / %s | bound |\n|---|---|---|---|---|\n", nameA, nameB, nameA, nameB)
	missed := 0
	for _, r := range rows {
		bound := ""
		switch {
		case r.Max > 0:
			bound = fmt.Sprintf("<= %.1fx", r.Max)
		case r.Min > 0:
			bound = fmt.Sprintf(">= %.1fx", r.Min)
		}
		if bound != "" && !r.Met {
			bound += " (missed)"
			missed++
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2fx | %s |\n", r.What, num(r.A), num(r.B), r.Ratio, bound)
	}
	if missed > 0 {
		fmt.Fprintf(w, "\n%d bound(s) missed\n", missed)
	}
	return nil
}

// databases says how many databases a demo had ready, in how many slots.
func databases(d demorun.DemoResult) string {
	if d.DBsPerSlot > 1 {
		return fmt.Sprintf("%d databases in %d slots of %d", d.Servers*d.DBsPerSlot, d.Servers, d.DBsPerSlot)
	}
	return fmt.Sprintf("%d slots", d.Slots)
}

// num prints a figure with the digits its size needs.
func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
