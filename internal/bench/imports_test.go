package bench

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// module is the module path of this repository.
const module = "github.com/pristinedb/pristine"

// mayImportBench says who may import a package under internal/bench: the
// bench packages themselves (their command tree is internal/bench/benchcli)
// and the pristine-bench binary. No arrow runs back up from a core package
// (archive, capture, oci, template, pool, server, mariadb...) nor from
// pristine's own command tree (internal/cli, cmd/pristine) to the code that
// measures it.
func mayImportBench(pkg string) bool {
	// scripts/gendocs renders both binaries' man pages and completions
	// for a release (scripts/release.sh); it is neither binary.
	for _, p := range []string{module + "/internal/bench", module + "/cmd/pristine-bench", module + "/scripts/gendocs"} {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

// TestOnlyPristineBenchImportsBench lists every package of the module with
// `go list` and fails for each one outside internal/bench, scripts/gendocs and
// cmd/pristine-bench that imports a package under internal/bench (tests aside: a core
// package's test may use a bench helper, its code may not).
func TestOnlyPristineBenchImportsBench(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		goBin = p
	}
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	benchPkgs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		if pkg == module+"/internal/bench" || strings.HasPrefix(pkg, module+"/internal/bench/") {
			benchPkgs++
		}
		if mayImportBench(pkg) {
			continue
		}
		for _, imp := range imports {
			if imp == module+"/internal/bench" || strings.HasPrefix(imp, module+"/internal/bench/") {
				t.Errorf("%s imports %s: only internal/bench, cmd/pristine-bench and scripts/gendocs may use the bench packages", pkg, imp)
			}
		}
	}
	// The list must have reached the bench packages themselves, or the
	// check above proves nothing.
	if benchPkgs < 4 {
		t.Fatalf("go list found %d packages under internal/bench, want at least 4:\n%s", benchPkgs, out)
	}
}

func TestMayImportBench(t *testing.T) {
	for pkg, want := range map[string]bool{
		module + "/internal/cli":                   false,
		module + "/cmd/pristine":                   false,
		module + "/cmd/pristine-bench":             true,
		module + "/internal/bench/benchcli":        true,
		module + "/internal/bench/archivebench":    true,
		module + "/internal/archive":               false,
		module + "/internal/benchmarks":            false,
		module + "/internal/template/templatetest": false,
	} {
		if got := mayImportBench(pkg); got != want {
			t.Errorf("mayImportBench(%s) = %v, want %v", pkg, got, want)
		}
	}
}
