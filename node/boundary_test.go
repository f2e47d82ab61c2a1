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

// TestDeterminismBoundary proves the node package keeps the determinism
// contract of docs/design.md section 2: its non-test files import no I/O,
// locking or global randomness, never read real time or sleep, and never
// start a goroutine. It reads the source, so a violation fails here before
// it can make a simulation irreproducible.
func TestDeterminismBoundary(t *testing.T) {
	banned := []string{"net", "net/http", "os", "os/exec", "sync", "sync/atomic", "math/rand", "math/rand/v2",
		"crypto/rand", "syscall", "unsafe", "io/ioutil", "runtime"}
	bannedCalls := []string{"Now", "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc", "Since", "Until"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
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
			if !strings.Contains(path, ".") && strings.HasPrefix(path, "github.com/chronos-timer/chronos/") {
				t.Errorf("%s imports project package %q", name, path)
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

// TestProjectImports proves node imports nothing of the project and only
// standard library packages plus the hashing module.
func TestProjectImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && path != "github.com/twmb/murmur3" {
				t.Errorf("%s imports %q: node may use only the standard library and murmur3", name, path)
			}
		}
	}
}
