package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// reportWindow is how far around the first violation the report lists
// events.
const reportWindow = 5 * time.Second

// ReplayCommand is the one-line command that replays the plan.
func ReplayCommand(p *Plan) string {
	if p.Origin != "" {
		return "go run ./cmd/chronos-sim run -scenario " + p.Origin
	}
	return fmt.Sprintf("go run ./cmd/chronos-sim run -seed %d", p.Seed)
}

// Summary is the one-line verdict of a run: seed, trace hash and result.
func Summary(res *Result) string {
	verdict := "PASS"
	switch {
	case res.Panic != "":
		verdict = "FAIL panic"
	case res.Failed():
		verdict = fmt.Sprintf("FAIL %d violations", len(res.Violations))
		if len(res.Unmet) > 0 {
			verdict = fmt.Sprintf("FAIL %d unmet expectations", len(res.Unmet))
		}
	case len(res.Violations) > 0:
		verdict = fmt.Sprintf("PASS (%d violations, as expected)", len(res.Violations))
	}
	line := fmt.Sprintf("seed=%d trace=%016x events=%d result=%s", res.Plan.Seed, res.TraceHash, res.Events, verdict)
	if res.Net.Shed > 0 {
		line += fmt.Sprintf(" shed=%d", res.Net.Shed)
	}
	return line
}

// WriteFailure writes the failure report: seed, fault mix, the first
// violated guarantee with the events around it, and the replay command.
// A run whose scenario expects its violations gets one too, headed so.
// htmlPath names the HTML report if one was written.
func WriteFailure(w io.Writer, res *Result, htmlPath string) {
	p := res.Plan
	verdict := "FAILED"
	if !res.Failed() {
		verdict = "VIOLATED AS EXPECTED"
	}
	fmt.Fprintf(w, "%s %s\nseed: %d\nfault mix: %s\nreplay: %s\n", verdict, p.Name, p.Seed, mixString(p), ReplayCommand(p))
	if htmlPath != "" {
		fmt.Fprintf(w, "html report: %s\n", htmlPath)
	}
	if res.Panic != "" {
		fmt.Fprintf(w, "%s\n", res.Panic)
		return
	}
	for _, u := range res.Unmet {
		fmt.Fprintf(w, "unmet: %s\n", u)
	}
	if len(res.Violations) == 0 {
		return
	}
	v := firstViolation(res.Violations)
	fmt.Fprintf(w, "first violation: %s at %v timer %016x: %s\n", v.Guarantee, v.At, v.Timer, v.Message)
	if v.Guarantee == "API" {
		writeWindow(w, res.History, v.At-reportWindow, v.At+reportWindow)
		return
	}
	if err := checker.WriteReport(w, res.History, res.Violations, header(res)); err != nil {
		fmt.Fprintf(w, "checker report: %v\n", err)
	}
}

func mixString(p *Plan) string {
	if len(p.Mix) == 0 {
		return "none"
	}
	return strings.Join(p.Mix, ",")
}

func firstViolation(vs []checker.Violation) checker.Violation {
	return slices.MinFunc(vs, func(a, b checker.Violation) int { return int(a.At - b.At) })
}

// writeWindow lists the ops, pops and faults of h between from and to, in
// time order.
func writeWindow(w io.Writer, h *checker.History, from, to time.Duration) {
	type line struct {
		at   time.Duration
		text string
	}
	var lines []line
	in := func(t time.Duration) bool { return t >= from && t <= to }
	for _, o := range h.Ops {
		if in(o.Invoke) || in(o.Return) {
			lines = append(lines, line{o.Invoke, fmt.Sprintf("op #%d client %d %s %016x via %s -> %s %d (returned %v) %+v",
				o.Seq, o.Client, o.Kind, o.Timer, o.Node, o.Outcome, o.Status, o.Return, o.Spec)})
		}
	}
	for _, p := range h.Pops {
		if in(p.At) {
			lines = append(lines, line{p.At, fmt.Sprintf("pop %s seq %d from %s to %s answered %d", p.Opaque, p.Seq, p.Node, p.URI, p.Answered)})
		}
	}
	for _, f := range h.Faults {
		if in(f.At) {
			lines = append(lines, line{f.At, fmt.Sprintf("fault %s %v %v %s", f.Kind, f.Nodes, f.Peers, f.Detail)})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return int(a.at - b.at) })
	fmt.Fprintf(w, "events from %v to %v:\n", from, to)
	for _, l := range lines {
		fmt.Fprintf(w, "  %12v %s\n", l.at, l.text)
	}
}
