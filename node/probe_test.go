package node

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProbesPlaced proves the probe registry and the code agree: every
// declared probe is passed by a hit or hitIf call somewhere in the
// package (a probe left behind by a rewrite would count nothing, and the
// simulator's sweep would fail on it for the wrong reason), and every
// name is a unique path of lower-case words.
func TestProbesPlaced(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	used := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, v := range n.Values {
					if call, ok := v.(*ast.CallExpr); ok && isIdent(call.Fun, "probe") {
						declared[n.Names[i].Name] = true
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "hit" && sel.Sel.Name != "hitIf" || len(n.Args) == 0 {
					return true
				}
				if id, ok := n.Args[len(n.Args)-1].(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
			return true
		})
	}
	if len(declared) != len(ProbeNames()) {
		t.Errorf("found %d probe declarations, registry holds %d", len(declared), len(ProbeNames()))
	}
	for name := range declared {
		if !used[name] {
			t.Errorf("probe %s is declared but no n.hit or n.hitIf passes it", name)
		}
	}
	for name := range used {
		if !declared[name] {
			t.Errorf("n.hit passes %s, which is not a declared probe", name)
		}
	}
	form := regexp.MustCompile(`^[a-z]+(/[a-z0-9]+(-[a-z0-9]+)*)+$`)
	for _, name := range ProbeNames() {
		if !form.MatchString(name) {
			t.Errorf("probe name %q is not a path of lower-case words (area/what-it-decides)", name)
		}
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// TestProbeHitsCounted proves a node counts its probes: a resync page
// served to a non-member passes resync/page-requester-not-member once,
// and the counts come back in the order of ProbeNames.
func TestProbeHitsCounted(t *testing.T) {
	n := newHarness(t).node
	before := n.ProbeHits()
	resp := n.resyncPage(Request{Method: "GET", URL: "/timers?node-for-replicas=10.9.9.9:7253&cluster-view-id=1"})
	if resp.Status != 404 {
		t.Fatalf("page for a non-member: got status %d, want 404", resp.Status)
	}
	after := n.ProbeHits()
	for i, name := range ProbeNames() {
		want := before[i]
		if name == "resync/page-requester-not-member" {
			want++
		}
		if after[i] != want {
			t.Errorf("probe %s: got %d hits, want %d", name, after[i], want)
		}
	}
}
