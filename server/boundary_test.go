package server

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportDirection proves the adapter's packages import one way
// (docs/design.md section 2): each non-test file of each package below
// server imports, of the project, only what its row allows, so that none
// reaches back up into server or sideways into a package that imports it.
func TestImportDirection(t *testing.T) {
	const module = "github.com/chronos-timer/chronos/"
	allowed := map[string][]string{
		"config":    {"node", "wire"},
		"lifecycle": {"server/config", "internal/lockfile"},
		"transport": {"node", "wire", "server/config"},
		"observe":   {"node", "server/transport"},
	}
	for dir, allow := range allowed {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		fset := token.NewFileSet()
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module)
				if ok && !slices.Contains(allow, path) {
					t.Errorf("%s imports %s; server/%s may import only %v of the project", name, path, dir, allow)
				}
			}
		}
	}
}
