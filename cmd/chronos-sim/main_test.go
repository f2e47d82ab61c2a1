package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageListsCommands proves that -h names every command the switch of
// main runs, each on a line of its own with what it does.
func TestUsageListsCommands(t *testing.T) {
	var b strings.Builder
	usage(&b)
	for _, name := range []string{"run", "sweep", "replay", "shrink"} {
		c, ok := findCommand(name)
		if !ok {
			t.Fatalf("no command %q in the table", name)
		}
		if !strings.Contains(b.String(), "\n  "+name+" ") || !strings.Contains(b.String(), c.about) {
			t.Errorf("usage does not list %s with %q:\n%s", name, c.about, b.String())
		}
	}
}

// TestRunReportsExpectedViolations proves that a pinned scenario that
// passes because it expects violations still writes its HTML report, as a
// failing run does, and exits 0.
func TestRunReportsExpectedViolations(t *testing.T) {
	scenario, err := filepath.Abs("../../scenarios/burst-slow-endpoint.scenario")
	if err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "report.html")
	if code := run(0, scenario, html); code != 0 {
		t.Fatalf("run %s: exit %d, want 0 (its violations are expected)", scenario, code)
	}
	data, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(data), "G4") {
		t.Errorf("report %s: %d bytes, %v; want an HTML report naming G4", html, len(data), err)
	}
}
