package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
)

// check is the seam to the checker package: every guarantee G1-G7 the
// history can be judged on, and how much of it was judged strictly.
func check(h *checker.History) ([]checker.Violation, checker.Coverage) {
	return checker.DefaultOptions().Judge(h)
}

// expectations evaluates the plan's expect lines against the run.
func (w *world) expectations(res *Result) []string {
	var unmet []string
	for _, e := range w.plan.Expect {
		switch e.What {
		case "ok":
			if len(res.Violations) > 0 {
				unmet = append(unmet, fmt.Sprintf("expect ok: got %d violations, first %s", len(res.Violations), res.Violations[0].Message))
			}
		case "violation":
			found := false
			for _, v := range res.Violations {
				found = found || v.Guarantee == e.Guarantee
			}
			if !found {
				unmet = append(unmet, fmt.Sprintf("expect violation %s: not reported", e.Guarantee))
			}
		case "pops":
			if n := w.distinctPops(e.Timer); n < e.Count {
				unmet = append(unmet, fmt.Sprintf("expect pops %s >= %d: got %d", e.Timer, e.Count, n))
			}
		case "shed":
			if n := res.Net.Shed; n < uint64(e.Count) {
				unmet = append(unmet, fmt.Sprintf("expect shed >= %d: got %d", e.Count, n))
			}
		case "probe":
			n := uint64(0)
			if i := slices.Index(node.ProbeNames(), e.Probe); i >= 0 && i < len(res.Probes) {
				n = res.Probes[i]
			}
			switch {
			case e.AtMost && n > uint64(e.Count):
				unmet = append(unmet, fmt.Sprintf("expect probe %s <= %d: got %d", e.Probe, e.Count, n))
			case !e.AtMost && n < uint64(e.Count):
				unmet = append(unmet, fmt.Sprintf("expect probe %s >= %d: got %d", e.Probe, e.Count, n))
			}
		}
	}
	return unmet
}

// distinctPops counts the distinct (definition, sequence number) pairs
// delivered for a timer label. Opaque data is "<label>.<op seq>".
func (w *world) distinctPops(label string) int {
	seen := map[string]bool{}
	for _, p := range w.hist.Pops {
		if l, _, ok := strings.Cut(p.Opaque, "."); ok && l == label {
			seen[fmt.Sprintf("%s/%d", p.Opaque, p.Seq)] = true
		}
	}
	return len(seen)
}

// header is the checker's report header for a run.
func header(res *Result) checker.ReportHeader {
	return checker.ReportHeader{Seed: int64(res.Plan.Seed), FaultMix: mixString(res.Plan),
		ReplayCommand: ReplayCommand(res.Plan), TraceHash: fmt.Sprintf("%016x", res.TraceHash),
		Unmet: res.Unmet, Panic: res.Panic}
}

// WriteHTML writes the checker's HTML report of a run, with the run's
// trace (the plan is run again to print it: runs are deterministic).
func WriteHTML(w io.Writer, res *Result) error {
	h := header(res)
	var trace strings.Builder
	Run(res.Plan, Options{Trace: &trace, SkipCheck: true})
	for _, line := range strings.Split(trace.String(), "\n") {
		at, err := time.ParseDuration(strings.Fields(line + " x")[0])
		if err == nil {
			h.Trace = append(h.Trace, checker.TraceLine{At: at, Text: strings.TrimSpace(line)})
		}
	}
	return checker.WriteHTML(w, res.History, res.Violations, h)
}
