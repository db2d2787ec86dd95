package docs

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestProductBinaryCarriesNoBenchmarks: `go list -deps ./cmd/pristine`
// names no package under internal/bench. The benchmarks, their charts and
// the docs generator are pristine-bench's (cmd/pristine-bench); pristine
// keeps only `demo` (internal/demorun).
func TestProductBinaryCarriesNoBenchmarks(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	deps := func(pkg string) []string {
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v: %s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	isBench := func(p string) bool {
		return p == module+"/internal/bench" || strings.HasPrefix(p, module+"/internal/bench/")
	}
	for _, p := range deps(module + "/cmd/pristine") {
		if isBench(p) {
			t.Errorf("the product binary (cmd/pristine) depends on %s: benchmark code belongs to cmd/pristine-bench; move what pristine needs out of internal/bench", p)
		}
	}
	// The check must be able to fail: pristine-bench does reach them.
	n := 0
	for _, p := range deps(module + "/cmd/pristine-bench") {
		if isBench(p) {
			n++
		}
	}
	if n < 5 {
		t.Fatalf("go list -deps ./cmd/pristine-bench names %d packages under internal/bench, want at least 5: has the layout changed?", n)
	}
}
