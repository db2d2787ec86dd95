package mariadb

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// modulePath is this repository's module; pkgPath is this package's.
const (
	modulePath = "github.com/pristinedb/pristine"
	pkgPath    = modulePath + "/internal/mariadb"
)

// flavourFunc names a function that tells the server families apart by
// name (isMySQL, IsMariaDB, a MySQL() method...).
var flavourFunc = regexp.MustCompile(`(?i)^(is)?(mysql|mariadb)$`)

// flavourChecks lists, as "file:line: what", every flavour check in one
// Go file's source: a use of the Flavor constants MariaDB or MySQL of
// this package, a function named for a server family, or a server
// family's name ("mariadb", "MySQL"...) compared with == or != or given
// to a function of package strings (strings.Contains(version,
// "MariaDB")). What differs between the families is a capability of
// Flavor (dialect.go); this is what the layout rule forbids outside
// internal/mariadb.
func flavourChecks(fset *token.FileSet, f *ast.File) []string {
	mine, stringsPkg := "", ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch p {
		case pkgPath:
			mine = name
		case "strings":
			stringsPkg = name
		}
	}
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what)
	}
	// family reports a server family's name: "mariadb" in any case; in a
	// comparison "mysql" in any case too (a Flavor's value), elsewhere
	// only "MySQL" (lower case "mysql" is the system schema's name, as
	// in strings.EqualFold(db, "mysql")).
	family := func(e ast.Expr, compared bool) bool {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return false
		}
		s, err := strconv.Unquote(lit.Value)
		return err == nil && (strings.EqualFold(s, "mariadb") || s == "MySQL" || compared && strings.EqualFold(s, "mysql"))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && mine != "" && x.Name == mine && (n.Sel.Name == "MySQL" || n.Sel.Name == "MariaDB") {
				report(n, "uses "+mine+"."+n.Sel.Name)
			}
		case *ast.FuncDecl:
			if flavourFunc.MatchString(n.Name.Name) {
				report(n, "declares "+n.Name.Name)
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (family(n.X, true) || family(n.Y, true)) {
				report(n, "compares with a server family's name")
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || stringsPkg == "" || x.Name != stringsPkg {
				return true
			}
			for _, a := range n.Args {
				if family(a, false) {
					report(n, "looks for a server family's name with strings."+sel.Sel.Name)
				}
			}
		}
		return true
	})
	return out
}

// TestFlavorChecksStayInMariadb parses every Go file of the module and
// fails on each flavour check (flavourChecks) outside internal/mariadb
// and its subpackages: the rest of pristine asks a Flavor for a
// capability and never tests which server family it is. Test files are
// exempt: a test picks its fixture or skips per server (MariaDB's
// SEQUENCE engine, MySQL's data dictionary), which is the test's choice
// and not pristine's behaviour. docs/architecture.md, "Server dialects".
func TestFlavorChecksStayInMariadb(t *testing.T) {
	users := 0
	files := eachModuleFile(t, nil, func(fset *token.FileSet, f *ast.File) {
		for _, imp := range f.Imports {
			if imp.Path.Value == strconv.Quote(pkgPath) {
				users++
			}
		}
		for _, c := range flavourChecks(fset, f) {
			t.Errorf("%s: a flavour check outside internal/mariadb: make the difference a capability of mariadb.Flavor (internal/mariadb/dialect.go) and ask it", c)
		}
	})
	// The walk must have reached the code that uses this package, or the
	// check above proves nothing.
	if files < 200 || users < 10 {
		t.Fatalf("parsed %d Go files, %d of them importing %s: want at least 200 and 10", files, users, pkgPath)
	}
}

// eachModuleFile parses every Go file of the module but tests, this
// package's own (mariadbtest included) and those skip names (by their
// slash path from the module root), and gives each to visit, its
// positions relative to the module root; it returns how many it parsed.
func eachModuleFile(t *testing.T, skip func(rel string) bool, visit func(*token.FileSet, *ast.File)) int {
	t.Helper()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "internal/mariadb" || d.Name() == "testdata" || d.Name() == "vendor" || (strings.HasPrefix(d.Name(), ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || skip != nil && skip(rel) {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		visit(fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestFlavourChecksFound: each kind of flavour check is found, under an
// import alias too, and a capability call is not.
func TestFlavourChecksFound(t *testing.T) {
	for src, want := range map[string]int{
		`import "github.com/pristinedb/pristine/internal/mariadb"
func f(b *mariadb.Binary) bool { return b.Flavor == mariadb.MySQL }`: 1,
		`import m "github.com/pristinedb/pristine/internal/mariadb"
var x = m.MariaDB`: 1,
		`import "strings"
func f(v string) bool { return !strings.Contains(strings.ToLower(v), "mariadb") }`: 1,
		`func isMySQL() bool { return false }`: 1,
		`type S struct{}
func (S) MySQL() bool { return false }`: 1,
		`func f(v string) bool { return v == "MySQL" }`: 1,
		`import "github.com/pristinedb/pristine/internal/mariadb"
func f(b *mariadb.Binary) bool { return b.Flavor.ClonePlugin() }`: 0,
		`import "strings"
func f(v string) bool { return strings.HasPrefix(v, "mariadb-backup") }`: 0,
		`import "strings"
func f(db string) bool { return strings.EqualFold(db, "mysql") }`: 0,
		`import s "strings"
func f(v string) bool { return s.Contains(v, "MariaDB") }`: 1,
		`func f(v string) bool { return v != "mysql" }`: 1,
		`type O struct{ MySQL bool }
var o = O{MySQL: true}`: 0,
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package x\n"+src, 0)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := flavourChecks(fset, f); len(got) != want {
			t.Errorf("%s:\nfound %d (%v), want %d", src, len(got), got, want)
		}
	}
}
