package node

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDeterminismBoundary proves the node package, and the wire package
// it speaks, keep the determinism contract of docs/design.md section 2:
// their non-test files import no I/O, locking or global randomness, never
// read real time or sleep, and never start a goroutine. It reads the
// source, so a violation fails here before it can make a simulation
// irreproducible.
func TestDeterminismBoundary(t *testing.T) {
	for _, dir := range []string{".", "../wire"} {
		checkDeterministic(t, dir)
	}
}

// checkDeterministic fails t for each non-test file of dir that breaks
// the determinism contract.
func checkDeterministic(t *testing.T, dir string) {
	t.Helper()
	banned := []string{"net", "net/http", "os", "os/exec", "sync", "sync/atomic", "math/rand", "math/rand/v2",
		"crypto/rand", "syscall", "unsafe", "io/ioutil", "runtime"}
	bannedCalls := []string{"Now", "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc", "Since", "Until"}
	fset := token.NewFileSet()
	for _, name := range sourceFiles(t, dir) {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		timeName := ""
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if slices.Contains(banned, path) {
				t.Errorf("%s imports %q", name, path)
			}
			if path == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: starts a goroutine", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == timeName && slices.Contains(bannedCalls, n.Sel.Name) {
					t.Errorf("%s: calls time.%s", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}

// sourceFiles lists dir's non-test Go files.
func sourceFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(name string) bool { return strings.HasSuffix(name, "_test.go") })
}

// imports returns the import paths of the Go file name.
func imports(t *testing.T, fset *token.FileSet, name string) []string {
	t.Helper()
	f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, imp := range f.Imports {
		paths = append(paths, strings.Trim(imp.Path.Value, `"`))
	}
	return paths
}

const (
	modulePath = "github.com/chronos-timer/chronos"
	wirePath   = modulePath + "/wire"
	nodePath   = modulePath + "/node"
)

// TestProjectImports proves node imports, beside the standard library,
// only the hashing module and the project's wire package, and that wire
// imports nothing but the standard library: the API's types sit below
// every package that speaks them.
func TestProjectImports(t *testing.T) {
	fset := token.NewFileSet()
	allowed := map[string][]string{".": {"github.com/dchest/siphash", "github.com/twmb/murmur3", wirePath}, "../wire": nil}
	for dir, ok := range allowed {
		for _, name := range sourceFiles(t, dir) {
			for _, path := range imports(t, fset, name) {
				first, _, _ := strings.Cut(path, "/")
				if strings.Contains(first, ".") && !slices.Contains(ok, path) {
					t.Errorf("%s imports %q: it may use only the standard library and %q", name, path, ok)
				}
			}
		}
	}
}

// TestClientSpeaksWire proves the Go client reaches the API through the
// wire package and never through node: none of its files, its own tests
// included, imports node. Its black-box tests (package client_test),
// which run real clusters and may ask a node's ring where a timer lives,
// are the exception.
func TestClientSpeaksWire(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("../client/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("client's files: %v, %v", files, err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "client" {
			continue
		}
		if paths := imports(t, fset, name); slices.Contains(paths, nodePath) {
			t.Errorf("%s imports %q; the client speaks %q", name, nodePath, wirePath)
		}
	}
}
