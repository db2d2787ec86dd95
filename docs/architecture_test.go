// Package docs holds the project's documents; its test keeps the package
// table of architecture.md true to the code.
package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/pristinedb/pristine"

// notInTable are the module's packages the table leaves out on purpose:
// the binary's main, examples, documents, scripts and test helpers.
func notInTable(pkg string) bool {
	rel := strings.TrimPrefix(pkg, module+"/")
	switch {
	case rel == "cmd/pristine", rel == "cmd/pristine-bench", rel == "internal/e2e", rel == "scripts", rel == "docs",
		strings.HasPrefix(rel, "scripts/"), // build tools (scripts/gendocs)
		strings.HasPrefix(rel, "examples/"), strings.HasPrefix(rel, "docs/"),
		strings.HasSuffix(rel, "test"): // mariadbtest, templatetest, but not pristinetest
		return rel != "pristinetest"
	}
	return false
}

// TestPackageTableMatchesImports reads the package table of
// architecture.md (one row per room, top to bottom) and the module's
// imports (`go list`), and fails when a package is missing from the table,
// when the table names a package that does not exist, or when an import
// points up the table: the document's promise that imports point
// downwards.
func TestPackageTableMatchesImports(t *testing.T) {
	rank := map[string]int{} // package -> row
	f, err := os.Open("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cell := regexp.MustCompile("`([a-z0-9/]+)`")
	row := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			if row > 0 && !strings.HasPrefix(line, "|") {
				break // the end of the first table
			}
			continue
		}
		row++
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			rank[module+"/"+m[1]] = row
		}
	}
	if row < 10 {
		t.Fatalf("found %d rows in architecture.md's package table: has its format changed?", row)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		seen[pkg] = true
		if notInTable(pkg) {
			continue
		}
		r, ok := rank[pkg]
		if !ok {
			t.Errorf("%s is not in architecture.md's package table: add it where its imports put it", strings.TrimPrefix(pkg, module+"/"))
			continue
		}
		for _, imp := range fields[1:] {
			ri, ok := rank[imp]
			if ok && ri < r {
				t.Errorf("%s (row %d) imports %s (row %d): imports must point down the table; move a row or the code",
					strings.TrimPrefix(pkg, module+"/"), r, strings.TrimPrefix(imp, module+"/"), ri)
			}
		}
	}
	for pkg := range rank {
		if !seen[pkg] {
			t.Errorf("architecture.md's package table names %s, which does not exist", strings.TrimPrefix(pkg, module+"/"))
		}
	}
}
