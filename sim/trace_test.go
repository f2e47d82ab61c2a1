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
