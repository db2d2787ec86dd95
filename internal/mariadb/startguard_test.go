package mariadb

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// serverPrograms are the programs that start or bootstrap a server. Only
// this package names them: every server pristine starts (slots, builds,
// captures, benchmarks, tests) goes through Start and InitDatadir, with
// the servers' account, the profile and the private tmpdir they set up.
var serverPrograms = []string{"mariadbd", "mysqld", "mariadb-install-db", "mysql_install_db", "mysqld_safe", "mariadbd-safe"}

// namesServer reports whether a string literal's value is a server
// program's name or a path ending in one.
func namesServer(s string) bool {
	for _, n := range serverPrograms {
		if s == n || strings.HasSuffix(s, "/"+n) {
			return true
		}
	}
	return false
}

// guardExempt are the files outside this package allowed to name a server
// program, and why.
var guardExempt = map[string]string{
	// Finds the servers of a dead daemon by their process name to kill
	// them; a public package, it may not import internal/mariadb.
	"pristinetest/serve.go": "reads /proc, starts nothing",
}

// isExecCall reports whether call starts or looks up a program:
// exec.Command, exec.CommandContext, exec.LookPath, os.StartProcess,
// syscall.Exec, syscall.ForkExec, unix.Exec.
func isExecCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch pkg.Name + "." + sel.Sel.Name {
	case "exec.Command", "exec.CommandContext", "exec.LookPath", "os.StartProcess",
		"syscall.Exec", "syscall.ForkExec", "unix.Exec":
		return true
	}
	return false
}

// serverStarts returns the places in a Go file that name a server program
// in a string literal, or run an Instance's binary (X.Binary.Path) as a
// program.
func serverStarts(fset *token.FileSet, f *ast.File) []string {
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(n.Value); err == nil && namesServer(s) {
				found = append(found, fset.Position(n.Pos()).String()+": names "+s)
			}
		case *ast.CallExpr:
			if !isExecCall(n) {
				return true
			}
			for _, a := range n.Args {
				ast.Inspect(a, func(m ast.Node) bool {
					if sel, ok := m.(*ast.SelectorExpr); ok && sel.Sel.Name == "Path" {
						if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Binary" {
							found = append(found, fset.Position(sel.Pos()).String()+": runs a server binary")
						}
					}
					return true
				})
			}
		}
		return true
	})
	return found
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// TestOnlyThisPackageStartsServers parses every Go file of the module but
// tests and this package's own (mariadbtest included) and fails for each
// that names mariadbd, mysqld or their bootstrap programs, or execs an
// Instance's binary: a second way to start a server is how the tmpdir and
// ownership bugs came back before.
func TestOnlyThisPackageStartsServers(t *testing.T) {
	files := eachModuleFile(t, func(rel string) bool { return guardExempt[rel] != "" }, func(fset *token.FileSet, f *ast.File) {
		for _, s := range serverStarts(fset, f) {
			t.Errorf("%s: only internal/mariadb starts servers (Start, InitDatadir)", s)
		}
	})
	if files < 100 {
		t.Fatalf("read only %d Go files of the module", files)
	}
}

// TestServerStartsFound feeds the check the ways a server was started
// outside this package before, and a bystander it must let through.
func TestServerStartsFound(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{`exec.Command(bin("mariadbd"), args...)`, 1},
		{`exec.CommandContext(ctx, "/usr/sbin/mysqld", "--version")`, 1},
		{`exec.CommandContext(ctx, installDB("mariadb-install-db"))`, 1},
		{`exec.Command(in.Binary.Path, "--help")`, 1},
		{`exec.Command("mariadb-backup", "--backup")`, 0},
		{`fmt.Println(in.Binary.Path)`, 0},
		{`exec.Command("mariadb-dump", "--all-databases")`, 0},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() { _ = "+tc.src+" }\n", 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := serverStarts(fset, f); len(got) != tc.want {
			t.Errorf("%s: found %v, want %d", tc.src, got, tc.want)
		}
	}
}
