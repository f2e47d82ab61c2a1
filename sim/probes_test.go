package sim

import (
	"slices"
	"strings"
	"testing"
)

// TestProbeTableCheck proves the CI sweep's probe rule: a probe no run
// reached fails unless pinned, a pinned probe some run reached fails
// (its pin is stale), and a pin of a probe the node does not declare
// fails; a reached, unpinned probe passes.
func TestProbeTableCheck(t *testing.T) {
	tab := NewProbeTable()
	if len(tab.Names) < 3 {
		t.Fatalf("the node declares %d probes; the test needs 3", len(tab.Names))
	}
	hits := make([]uint64, len(tab.Names))
	for i := range hits {
		hits[i] = 1
	}
	hits[0], hits[1] = 0, 0 // never reached: one pinned, one not
	tab.Add(7, &Result{Probes: hits})
	pending := map[string]string{tab.Names[1]: "pinned", tab.Names[2]: "stale pin", "no/such-probe": "unknown"}
	got := strings.Join(tab.Check(pending), "\n")
	for _, want := range []string{
		"probe " + tab.Names[0] + " was never reached by 1 runs",
		"probe " + tab.Names[2] + " is pinned as unreached",
		"pins probe no/such-probe, which the node does not declare",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Check problems:\n%s\nwant one containing %q", got, want)
		}
	}
	if strings.Contains(got, "probe "+tab.Names[1]+" ") {
		t.Errorf("Check problems:\n%s\nwant none about pinned, unreached %s", got, tab.Names[1])
	}
	if n := len(tab.Check(pending)); n != 3 {
		t.Errorf("Check: got %d problems, want 3", n)
	}
	if tab.First[2] != 7 || tab.Runs[2] != 1 {
		t.Errorf("probe %s: first seed %d in %d runs, want 7 in 1", tab.Names[2], tab.First[2], tab.Runs[2])
	}
}

// TestUnreachedProbesFile proves the repository's pins parse and name
// probes the node declares, each with a reason.
func TestUnreachedProbesFile(t *testing.T) {
	pinned, err := ReadUnreachedProbes("../" + UnreachedProbesFile)
	if err != nil {
		t.Fatal(err)
	}
	names := NewProbeTable().Names
	for name, why := range pinned {
		if !slices.Contains(names, name) {
			t.Errorf("%s pins %s, which the node does not declare", UnreachedProbesFile, name)
		}
		if why == "" {
			t.Errorf("%s pins %s without a reason", UnreachedProbesFile, name)
		}
	}
}
