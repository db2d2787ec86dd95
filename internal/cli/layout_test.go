package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// daemonSide are the files that run the daemon (serve) or its listener
// (dashboard): the only ones that may import internal/server. Every other
// command speaks to the daemon through package client and api's types.
var daemonSide = map[string]bool{"serve.go": true, "dashboard.go": true}

// TestCommandFilesKeepTheRules parses every non-test file of the package
// and fails on: an import of internal/server outside daemonSide, any import
// of internal/bench, an init function (commands are listed in NewRoot), and
// a use of os.Stdout, os.Stderr, os.Stdin or fmt.Print* outside stdio.go
// (commands write to Globals.IO).
func TestCommandFilesKeepTheRules(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasSuffix(path, "/internal/server") && !daemonSide[name] {
				t.Errorf("%s imports internal/server: use package client and api's types (only %v run the daemon)", name, keys(daemonSide))
			}
			if strings.Contains(path, "/internal/bench") {
				t.Errorf("%s imports %s: benchmarks belong to pristine-bench (internal/bench/benchcli)", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv == nil && n.Name.Name == "init" {
					t.Errorf("%s has an init function: list the command in NewRoot (root.go)", name)
				}
			case *ast.SelectorExpr:
				x, ok := n.X.(*ast.Ident)
				if !ok || name == "stdio.go" {
					return true
				}
				if x.Name == "os" && (n.Sel.Name == "Stdout" || n.Sel.Name == "Stderr" || n.Sel.Name == "Stdin") ||
					x.Name == "fmt" && strings.HasPrefix(n.Sel.Name, "Print") {
					t.Errorf("%s uses %s.%s: write to g.IO (the streams the command was given)", name, x.Name, n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 15 {
		t.Fatalf("checked %d files, want the package's command files: has the layout changed?", checked)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestLayoutCheckCanFail: the check above finds what it looks for.
func TestLayoutCheckCanFail(t *testing.T) {
	src := "package cli\nimport (\"fmt\"; \"os\")\nfunc init() {}\nfunc f() { fmt.Println(os.Stdout) }\n"
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok && (x.Name == "os" && s.Sel.Name == "Stdout" || x.Name == "fmt" && s.Sel.Name == "Println") {
				found++
			}
		}
		return true
	})
	if found != 2 {
		t.Fatalf("found %d of the 2 direct writes in the sample", found)
	}
}
