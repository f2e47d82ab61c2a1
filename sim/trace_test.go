package sim

import (
	"strings"
	"testing"
)

// TestPrintedTraceKeepsHash proves that printing a run's trace, bodies
// included (what chronos-sim replay does), leaves its trace hash and event
// count as they are without it (chronos-sim run): one plan has one hash,
// whichever command shows it.
func TestPrintedTraceKeepsHash(t *testing.T) {
	p := Generate(3)
	quiet := Run(p, Options{})
	var trace strings.Builder
	printed := Run(p, Options{Trace: &trace, TraceBodies: true})
	if !strings.Contains(trace.String(), "  body ") {
		t.Fatalf("the printed trace shows no body; the test proves nothing:\n%.2000s", trace.String())
	}
	if printed.TraceHash != quiet.TraceHash || printed.Events != quiet.Events {
		t.Errorf("printed run: trace %016x (%d events), quiet run: %016x (%d events); want one hash",
			printed.TraceHash, printed.Events, quiet.TraceHash, quiet.Events)
	}
}

// TestUncheckedReplayKeepsRunHash proves what the sweep's determinism
// check rests on: a run whose history is not judged (SkipCheck, the
// sweep's second run) leaves the run hash of one that is, though not its
// trace hash, whose last event hashes the checker's count of violations.
// The plan breaks guarantees, so that the two counts differ.
func TestUncheckedReplayKeepsRunHash(t *testing.T) {
	p := loadScenario(t, scenarioDir+"/burst-slow-endpoint.scenario")
	checked, unchecked := Run(p, Options{}), Run(p, Options{SkipCheck: true})
	if len(checked.Violations) == len(unchecked.Violations) {
		t.Fatalf("got %d violations checked and unchecked; the test proves nothing", len(checked.Violations))
	}
	if checked.TraceHash == unchecked.TraceHash {
		t.Fatalf("got trace %016x checked and unchecked, want them apart by the violation count", checked.TraceHash)
	}
	if checked.RunHash != unchecked.RunHash || checked.Events != unchecked.Events || checked.RunHash == 0 {
		t.Errorf("checked: run hash %016x (%d events), unchecked: %016x (%d events); want one nonzero hash",
			checked.RunHash, checked.Events, unchecked.RunHash, unchecked.Events)
	}
	o := SeedOutcome{Plan: p, Result: checked, ReplayHash: unchecked.RunHash, ReplayEvents: unchecked.Events}
	if !o.Deterministic() {
		t.Errorf("got %s, want the outcome deterministic", o.Line())
	}
	if o.ReplayHash++; o.Deterministic() {
		t.Errorf("a replay with another run hash: got deterministic, want not")
	}
}
