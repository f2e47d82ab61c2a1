package checker

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"io"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Drawing limits of the HTML timeline.
const (
	svgWidth      = 1200
	svgLabelWidth = 120
	svgRowHeight  = 22
	maxSVGPops    = 20000
	maxSVGClients = 16
	// maxReportViolations caps the violation table.
	maxReportViolations = 200
)

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
// the violations marked, and porcupine's visualization of the per-timer
// model (with the faults and violations as annotations) in an iframe.
func (o Options) WriteHTML(w io.Writer, h *History, vs []Violation, r ReportHeader) error {
	o.mustValidate()
	x := newIndex(h, o)
	viz, info, err := x.visualize(vs)
	if err != nil {
		return fmt.Errorf("checker: porcupine visualization: %w", err)
	}
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Chronos seed %d</title>\n%s</head><body>\n", r.Seed, htmlStyle)
	fmt.Fprintf(b, "<h1>Chronos checker report, seed %d</h1>\n", r.Seed)
	writeVerdict(b, vs, r)
	fmt.Fprintf(b, "<table class=\"hdr\">\n")
	for _, kv := range [][2]string{{"fault mix", r.FaultMix}, {"trace hash", r.TraceHash},
		{"replay", r.ReplayCommand}, {"history", x.summary()}, {"violations", countByGuarantee(vs)}} {
		fmt.Fprintf(b, "<tr><th>%s</th><td><code>%s</code></td></tr>\n", kv[0], esc(orNone(kv[1])))
	}
	fmt.Fprintf(b, "</table>\n")
	writeViolationTable(b, vs)
	fmt.Fprintf(b, "<h2>Timeline</h2>\n")
	writeLegend(b)
	x.writeSVG(b, vs)
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

const htmlStyle = `<style>
body{font-family:sans-serif;margin:1em 2em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
tr.violation td{background:#fdecea}
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
	fmt.Fprintf(b, "<table><tr><th>guarantee</th><th>at</th><th>timer</th><th>what</th></tr>\n")
	for i, v := range vs {
		if i == maxReportViolations {
			fmt.Fprintf(b, "<tr><td colspan=\"4\">... %d more</td></tr>\n", len(vs)-i)
			break
		}
		fmt.Fprintf(b, "<tr class=\"violation\" id=\"v%d\"><td>%s</td><td>%v</td><td><a href=\"#timer-%016x\">%016x</a></td><td>%s</td></tr>\n",
			i, esc(v.Guarantee), v.At, v.Timer, v.Timer, esc(v.Message))
	}
	fmt.Fprintf(b, "</table>\n")
}

// visualize runs the porcupine check and renders its visualization, with
// the faults and violations added as annotations.
func (x *index) visualize(vs []Violation) (string, LinearizabilityInfo, error) {
	info := x.o.linearizable(x)
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
		return "", info, err
	}
	return buf.String(), info, nil
}

// svgRows names the timeline's rows: the cluster, each node, each client.
func (x *index) svgRows() (nodes []string, clients []int) {
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			nodes = append(nodes, n)
		}
	}
	for _, p := range x.h.Pops {
		add(p.Node)
	}
	for _, op := range x.h.Ops {
		add(op.Node)
	}
	for _, f := range x.h.Faults {
		for _, n := range append(append([]string(nil), f.Nodes...), f.Peers...) {
			add(n)
		}
	}
	sort.Strings(nodes)
	cs := map[int]bool{}
	for _, op := range x.h.Ops {
		cs[op.Client%maxSVGClients] = true
	}
	for c := range cs {
		clients = append(clients, c)
	}
	sort.Ints(clients)
	return nodes, clients
}

// writeSVG draws the timeline.
func (x *index) writeSVG(b *bufio.Writer, vs []Violation) {
	nodes, clients := x.svgRows()
	row := map[string]int{"": 0}
	for i, n := range nodes {
		row[n] = i + 1
	}
	clientRow := map[int]int{}
	for i, c := range clients {
		clientRow[c] = len(nodes) + 1 + i
	}
	height := (len(nodes)+len(clients)+2)*svgRowHeight + 20
	xpos := func(t time.Duration) float64 {
		return svgLabelWidth + float64(svgWidth-svgLabelWidth-10)*float64(t)/float64(max(x.end, 1))
	}
	ypos := func(r int) int { return r*svgRowHeight + 4 }
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", svgWidth, height)
	x.svgAxis(b, nodes, clients, xpos, ypos, height)
	x.svgFaults(b, row, xpos, ypos)
	x.svgOps(b, clientRow, xpos, ypos)
	x.svgPops(b, row, xpos, ypos)
	if x.tl.liveFrom > 0 {
		fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%d\" stroke=\"green\" stroke-dasharray=\"4\"><title>liveness phase from %v</title></line>\n",
			xpos(x.tl.liveFrom), xpos(x.tl.liveFrom), height, x.tl.liveFrom)
	}
	for _, v := range vs {
		fmt.Fprintf(b, "<line class=\"violation\" x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%d\" stroke=\"red\" stroke-width=\"2\"><title>%s</title></line>\n",
			xpos(v.At), xpos(v.At), height, esc(describe(v)))
	}
	fmt.Fprintf(b, "</svg>\n")
}

func (x *index) svgAxis(b *bufio.Writer, nodes []string, clients []int, xpos func(time.Duration) float64, ypos func(int) int, height int) {
	labels := append([]string{"cluster"}, nodes...)
	for _, c := range clients {
		labels = append(labels, fmt.Sprintf("client %d", c))
	}
	for i, l := range labels {
		fmt.Fprintf(b, "<text x=\"2\" y=\"%d\">%s</text><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/>\n",
			ypos(i)+14, esc(l), svgLabelWidth, svgWidth, ypos(i)+svgRowHeight, ypos(i)+svgRowHeight)
	}
	for i := 0; i <= 10; i++ {
		t := x.end * time.Duration(i) / 10
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\">%v</text>\n", xpos(t)-10, height-4, t.Round(time.Millisecond))
	}
}

func (x *index) svgFaults(b *bufio.Writer, row map[string]int, xpos func(time.Duration) float64, ypos func(int) int) {
	for _, s := range x.tl.spans {
		targets := append(append([]string(nil), s.fault.Nodes...), s.fault.Peers...)
		if len(targets) == 0 {
			targets = []string{""}
		}
		w := max(xpos(s.end)-xpos(s.from), 2)
		for _, n := range targets {
			fmt.Fprintf(b, "<rect class=\"fault\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" opacity=\"0.7\"><title>%s %v..%v</title></rect>\n",
				xpos(s.from), ypos(row[n]), w, svgRowHeight-4, faultColorOf(s.fault.Kind), esc(faultText(s.fault)), s.from, s.end)
		}
	}
}

func faultColorOf(k FaultKind) string {
	if c, ok := faultColor[k]; ok {
		return c
	}
	return "#bdbdbd"
}

func (x *index) svgOps(b *bufio.Writer, clientRow map[int]int, xpos func(time.Duration) float64, ypos func(int) int) {
	color := map[Outcome]string{OK: "#388e3c", Failed: "#757575", Unknown: "#f57c00"}
	for _, op := range x.h.Ops {
		end := op.Return
		if op.Outcome == Unknown && end <= op.Invoke {
			end = x.end
		}
		y := ypos(clientRow[op.Client%maxSVGClients]) + svgRowHeight/2
		fmt.Fprintf(b, "<line class=\"op\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"5\"><title>%s</title></line>\n",
			xpos(op.Invoke), max(xpos(end), xpos(op.Invoke)+2), y, y, color[op.Outcome], esc(opText(op)))
	}
}

func (x *index) svgPops(b *bufio.Writer, row map[string]int, xpos func(time.Duration) float64, ypos func(int) int) {
	for i, p := range x.h.Pops {
		if i == maxSVGPops {
			break
		}
		fill := "#1976d2"
		if p.Answered < 200 || p.Answered > 299 {
			fill = "#000"
		}
		fmt.Fprintf(b, "<circle class=\"pop\" cx=\"%.1f\" cy=\"%d\" r=\"3\" fill=\"%s\"><title>%v pop seq %d %s from %s</title></circle>\n",
			xpos(p.At), ypos(row[p.Node])+svgRowHeight/2, fill, p.At, p.Seq, esc(fmt.Sprintf("%q", p.Opaque)), esc(p.Node))
	}
}
