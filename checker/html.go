package checker

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"io"

	"github.com/anishathalye/porcupine"
)

// maxReportViolations caps the violation table.
const maxReportViolations = 200

// faultColor gives each fault kind its colour on the timeline.
var faultColor = map[FaultKind]string{
	Crash: "#e57373", Pause: "#ffb74d", Partition: "#ba68c8", Clog: "#9575cd",
	ClockJump: "#4fc3f7", ClockDrift: "#81d4fa", SlowCallback: "#fff176",
	FailCallback: "#ffd54f", ScaleUp: "#aed581", ScaleDown: "#dce775",
}

// WriteHTML writes a self-contained HTML failure report with
// DefaultOptions.
func WriteHTML(w io.Writer, h *History, vs []Violation, r ReportHeader) error {
	return DefaultOptions().WriteHTML(w, h, vs, r)
}

// WriteHTML writes a self-contained HTML page: the run's header, the
// violations, an SVG timeline of nodes, faults, client ops and pops with
// the violations marked (zoomed on the first violation's timer, the whole
// run one click away), a section per timer, and porcupine's visualization
// of the per-timer model (with the faults and violations as annotations)
// in an iframe.
func (o Options) WriteHTML(w io.Writer, h *History, vs []Violation, r ReportHeader) error {
	o.mustValidate()
	x := newIndex(h, o)
	// The checks leave their verdicts in x, from which the coverage and
	// each pop's judged cell are drawn; the violations shown are vs.
	_, info, _ := x.judge()
	if x.unjudged != "" {
		return x.writeUnjudged(w, vs, r)
	}
	viz, err := x.visualize(info, vs)
	if err != nil {
		return fmt.Errorf("checker: porcupine visualization: %w", err)
	}
	b := bufio.NewWriter(w)
	x.writeHead(b, vs, r)
	x.writeTimelines(b, vs)
	x.writeCoverage(b)
	x.writeTimers(b, vs, r.Trace)
	fmt.Fprintf(b, "<h2>Linearizability (porcupine)</h2>\n<p>result: <b>%s</b>; %d timers, %d operations. %s</p>\n",
		esc(string(info.Result)), info.Partitions, info.Operations, esc(info.Note))
	fmt.Fprintf(b, "<iframe class=\"porcupine\" title=\"porcupine visualization\" srcdoc=\"%s\"></iframe>\n", esc(viz))
	if len(vs) > 0 {
		fmt.Fprintf(b, "<h2>Events around the first violation</h2>\n<pre>")
		for _, e := range x.eventsAround(vs[0], vs[0].At-o.ReportWindow, vs[0].At+o.ReportWindow) {
			fmt.Fprintf(b, "%12v  %-12s %s\n", e.At, esc(e.Kind), esc(e.Text))
		}
		fmt.Fprintf(b, "</pre>\n")
	}
	fmt.Fprintf(b, "</body></html>\n")
	return b.Flush()
}

// writeHead writes the page's head, the run's header, the verdict and
// the violations.
func (x *index) writeHead(b *bufio.Writer, vs []Violation, r ReportHeader) {
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Chronos seed %d</title>\n%s</head><body>\n", r.Seed, htmlStyle)
	fmt.Fprintf(b, "<h1>Chronos checker report, seed %d</h1>\n", r.Seed)
	writeVerdict(b, vs, r)
	fmt.Fprintf(b, "<table class=\"hdr\">\n")
	for _, kv := range [][2]string{{"fault mix", r.FaultMix}, {"trace hash", r.TraceHash},
		{"replay", r.ReplayCommand}, {"history", x.summary()}, {"violations", countByGuarantee(vs)}} {
		fmt.Fprintf(b, "<tr><th>%s</th><td class=\"msg\"><code>%s</code></td></tr>\n", kv[0], esc(orNone(kv[1])))
	}
	fmt.Fprintf(b, "</table>\n")
	writeViolationTable(b, vs)
}

// writeUnjudged is WriteHTML's page for a history too large to judge
// (Options.MaxAttributed): the header and the violations, which say so. The
// timelines and timer sections would be as large as what was not judged.
func (x *index) writeUnjudged(w io.Writer, vs []Violation, r ReportHeader) error {
	b := bufio.NewWriter(w)
	x.writeHead(b, vs, r)
	fmt.Fprintf(b, "<p>%s</p>\n</body></html>\n", esc(x.unjudged))
	return b.Flush()
}

// htmlStyle wraps every long line (a message, a trace line, a replay
// command) inside the page's width: nothing scrolls sideways but the
// porcupine frame.
const htmlStyle = `<style>
body{font-family:sans-serif;margin:1em 2em}
table{border-collapse:collapse;max-width:100%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
table.wide{width:100%}td.msg,.verdict p,pre,code{overflow-wrap:anywhere}pre{white-space:pre-wrap}td.nowrap,td.nowrap code{white-space:nowrap;overflow-wrap:normal}
tr.violation td,td.violated{background:#fdecea}td.violated b{color:#c62828}
.early{color:#c62828}
svg{max-width:100%;height:auto}
.verdict{padding:4px 12px;margin:8px 0;border-radius:4px}.verdict.fail{background:#fdecea;border:1px solid #e53935}.verdict.pass{background:#e8f5e9;border:1px solid #43a047}
.swatch{display:inline-block;width:14px;height:14px;border:1px solid #999}
pre.trace{max-height:400px;overflow:auto;background:#f7f7f7}
details{margin:4px 0}
.porcupine{width:100%;height:700px;border:1px solid #ccc}
svg text{font-size:11px;font-family:monospace}
</style>
`

func esc(s string) string { return html.EscapeString(s) }

func writeViolationTable(b *bufio.Writer, vs []Violation) {
	fmt.Fprintf(b, "<h2>Violations (%d)</h2>\n", len(vs))
	if len(vs) == 0 {
		fmt.Fprintf(b, "<p>none</p>\n")
		return
	}
	fmt.Fprintf(b, "<table class=\"wide\"><tr><th>guarantee</th><th>at</th><th>timer</th><th>what</th></tr>\n")
	for i, v := range vs {
		if i == maxReportViolations {
			fmt.Fprintf(b, "<tr><td colspan=\"4\">... %d more</td></tr>\n", len(vs)-i)
			break
		}
		fmt.Fprintf(b, "<tr class=\"violation\" id=\"v%d\"><td>%s</td><td class=\"nowrap\">%v</td><td class=\"nowrap\"><a href=\"#timer-%016x\"><code>%016x</code></a></td><td class=\"msg\">%s</td></tr>\n",
			i, esc(v.Guarantee), v.At, v.Timer, v.Timer, esc(v.Message))
	}
	fmt.Fprintf(b, "</table>\n")
}

// visualize renders the visualization of what the porcupine check found,
// with the faults and violations added as annotations.
func (x *index) visualize(info LinearizabilityInfo, vs []Violation) (string, error) {
	var notes []porcupine.Annotation
	for _, s := range x.tl.spans {
		notes = append(notes, porcupine.Annotation{Tag: "faults", Start: int64(s.from), End: int64(s.end),
			Description: faultText(s.fault), BackgroundColor: faultColor[s.fault.Kind]})
	}
	for _, v := range vs {
		notes = append(notes, porcupine.Annotation{Tag: "violations", Start: int64(v.At),
			Description: v.Guarantee, Details: v.Message, BackgroundColor: "#ff8a80"})
	}
	info.Info.AddAnnotations(notes)
	var buf bytes.Buffer
	if err := porcupine.Visualize(info.Model, info.Info, &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}
