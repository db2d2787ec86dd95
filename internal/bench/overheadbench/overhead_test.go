package overheadbench

import (
	"context"
	"os"
	"testing"

	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestOverheadGuard runs the guard as CI does, at two slots on a btrfs
// scratch filesystem: every figure is measured, both resets ran in place,
// and no ratio passes DefaultBounds (a regression in pristine's start or
// in-place reset fails it). Nothing is left running.
func TestOverheadGuard(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a btrfs scratch filesystem and servers under their own ids")
	}
	st := templatetest.NewScratchBuilder(t, "btrfs", 2<<30)
	rep, err := Run(context.Background(), st, Options{Slots: 2, Scale: 0.02, Resets: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *rep)
	for name, v := range map[string]float64{"bare start wall": rep.BareStartWallS, "pool start wall": rep.PoolStartWallS,
		"bare start CPU": rep.BareStartCPUMS, "pool start CPU": rep.PoolStartCPUMS, "bare reset": rep.BareResetMS,
		"bare reset CPU": rep.BareResetCPUMS, "pool reset": rep.PoolResetMS, "pool reset CPU": rep.PoolResetCPUMS} {
		if v <= 0 {
			t.Errorf("%s = %v, want a measurement", name, v)
		}
	}
	if rep.Table == "" {
		t.Error("no table was changed")
	}
	if err := rep.Check(DefaultBounds); err != nil {
		t.Fatal(err)
	}
}
