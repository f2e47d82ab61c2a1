package sim

import (
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/chronos-timer/chronos/checker"
)

// check is the seam to the checker package: every guarantee G1-G7 the
// history can be judged on.
func check(h *checker.History) []checker.Violation { return checker.Check(h) }

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

// writeHTML is the seam to the checker's HTML report.
func writeHTML(w io.Writer, res *Result) error {
	var b strings.Builder
	WriteFailure(&b, res, "")
	_, err := fmt.Fprintf(w, "<!doctype html><title>%s</title><pre>%s</pre>\n", html.EscapeString(res.Plan.Name), html.EscapeString(b.String()))
	return err
}
