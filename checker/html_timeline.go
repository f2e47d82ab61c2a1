package checker

import (
	"bufio"
	"fmt"
	"sort"
	"time"
)

// Drawing limits of the HTML timeline.
const (
	svgWidth      = 1200
	svgLabelWidth = 150
	svgRowHeight  = 22
	// maxSVGPops caps the pops one timeline draws, and maxSVGDue the due
	// windows of the followed timer.
	maxSVGPops    = 20000
	maxSVGDue     = 500
	maxSVGClients = 16
	// zoomPad is the least margin of the zoomed timeline around what it
	// shows.
	zoomPad = 100 * time.Millisecond
)

// tickUnits are the units a tick's time is rounded to, smallest first.
var tickUnits = []time.Duration{time.Microsecond, 10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond,
	10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute, 10 * time.Minute, time.Hour}

// Colours of the timeline, which the legend repeats.
const (
	colorAccepted  = "#1976d2" // a pop the endpoint accepted
	colorRefused   = "#000000" // a pop the endpoint refused
	colorDue       = "#a5d6a7" // the followed timer's due windows
	colorViolation = "#e53935"
)

// opColor gives each op outcome its colour.
var opColor = map[Outcome]string{OK: "#388e3c", Failed: "#757575", Unknown: "#f57c00"}

// svgView is the stretch of time one timeline draws, and the timer it
// follows (0 for none): that timer's due windows get a row of their own,
// its ops and pops are drawn large and the others faded.
type svgView struct {
	from, to time.Duration
	focus    uint64
	defs     []*def // the followed timer's definitions
}

// wholeView is the whole run, following no timer.
func (x *index) wholeView() svgView { return svgView{from: 0, to: max(x.end, 1)} }

// zoomView is the view of the first violation's timer around that
// violation: the due window of the timer's pop last due at or before it
// (a late or missing pop's), any due window and any of the timer's writes,
// pops and violations within ReportWindow of it, padded by a tenth on each
// side. It is false when no violation names a timer the history wrote.
func (x *index) zoomView(vs []Violation) (svgView, bool) {
	if len(vs) == 0 || vs[0].Timer == 0 {
		return svgView{}, false
	}
	v := vs[0]
	z := svgView{from: v.At, to: v.At, focus: v.Timer}
	for _, d := range x.defs {
		if d.timer == v.Timer {
			z.defs = append(z.defs, d)
		}
	}
	if len(z.defs) == 0 {
		return svgView{}, false
	}
	near := func(t time.Duration) bool { return t >= v.At-x.o.ReportWindow && t <= v.At+x.o.ReportWindow }
	take := func(t time.Duration) { z.from, z.to = min(z.from, t), max(z.to, t) }
	for _, d := range z.defs {
		last := 0 // the pop last due at or before the violation
		for k := 1; k <= d.op.Spec.Pops(); k++ {
			lo, hi := d.due(k)
			if lo > v.At+x.o.ReportWindow {
				break
			}
			if lo <= v.At {
				last = k
			}
			if near(lo) || near(hi) {
				take(lo)
				take(hi)
			}
		}
		if last > 0 {
			lo, hi := d.due(last)
			take(lo)
			take(hi)
		}
	}
	for _, op := range x.byTimer[v.Timer] {
		for _, t := range []time.Duration{op.Invoke, op.Return} {
			if near(t) {
				take(t)
			}
		}
	}
	for _, p := range x.h.Pops {
		if near(p.At) && x.popTimer(p) == v.Timer {
			take(p.At)
		}
	}
	for _, w := range vs {
		if near(w.At) && w.Timer == v.Timer {
			take(w.At)
		}
	}
	pad := max((z.to-z.from)/10, zoomPad)
	z.from, z.to = max(z.from-pad, 0), min(z.to+pad, max(x.end, z.to))
	return z, true
}

// popTimer is the timer of pop p: its definition's, as the checks judge
// it, else the one it names.
func (x *index) popTimer(p Pop) uint64 {
	if d := x.byOpaque[p.Opaque]; d != nil && d.timer != 0 {
		return d.timer
	}
	return p.Timer
}

// in reports whether [a, b] meets the view.
func (v svgView) in(a, b time.Duration) bool { return b >= v.from && a <= v.to }

// xpos is where time t falls across the plot, clamped to its edges.
func (v svgView) xpos(t time.Duration) float64 {
	t = min(max(t, v.from), v.to)
	return svgLabelWidth + float64(svgWidth-svgLabelWidth-10)*float64(t-v.from)/float64(max(v.to-v.from, 1))
}

// writeTimelines draws the timeline: zoomed on the first violation's
// timer when there is one, with the whole run in a section one click
// away; else the whole run.
func (x *index) writeTimelines(b *bufio.Writer, vs []Violation) {
	fmt.Fprintf(b, "<h2>Timeline</h2>\n")
	writeLegend(b)
	whole := x.wholeView()
	z, ok := x.zoomView(vs)
	if !ok {
		x.writeSVG(b, vs, whole, "whole")
		return
	}
	fmt.Fprintf(b, "<p class=\"zoom\">Zoomed on timer <a href=\"#timer-%016x\"><code>%016x</code></a>, the first violation's: "+
		"%v to %v of a run that ends at %v. Its due windows have the top row; its writes and pops are drawn large, "+
		"the other timers' faded.</p>\n", z.focus, z.focus, z.from, z.to, x.end)
	x.writeSVG(b, vs, z, "zoom")
	fmt.Fprintf(b, "<details class=\"whole\"><summary>Whole run, 0 to %v: every timer</summary>\n", x.end)
	x.writeSVG(b, vs, whole, "whole")
	fmt.Fprintf(b, "</details>\n")
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

// svgLayout places a view's rows: the followed timer's due windows (when
// it follows one), the cluster, each node, each client.
type svgLayout struct {
	labels    []string
	row       map[string]int // a node's row; "" is the cluster's
	clientRow map[int]int
	height    int
}

func (x *index) layout(v svgView) svgLayout {
	nodes, clients := x.svgRows()
	var l svgLayout
	if v.focus != 0 {
		l.labels = append(l.labels, fmt.Sprintf("due %016x", v.focus))
	}
	l.row = map[string]int{"": len(l.labels)}
	l.labels = append(l.labels, "cluster")
	for _, n := range nodes {
		l.row[n] = len(l.labels)
		l.labels = append(l.labels, n)
	}
	l.clientRow = map[int]int{}
	for _, c := range clients {
		l.clientRow[c] = len(l.labels)
		l.labels = append(l.labels, fmt.Sprintf("client %d", c))
	}
	l.height = (len(l.labels)+1)*svgRowHeight + 20
	return l
}

// ypos is the top of row r.
func ypos(r int) int { return r*svgRowHeight + 4 }

// writeSVG draws one view of the timeline; id names it in the page.
func (x *index) writeSVG(b *bufio.Writer, vs []Violation, v svgView, id string) {
	l := x.layout(v)
	fmt.Fprintf(b, "<svg id=\"timeline-%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		id, svgWidth, l.height, svgWidth, l.height)
	x.svgAxis(b, v, l)
	x.svgDue(b, v)
	x.svgFaults(b, v, l)
	x.svgOps(b, v, l)
	x.svgPops(b, v, l)
	if lf := x.tl.liveFrom; lf > 0 && v.in(lf, lf) {
		fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%d\" stroke=\"green\" stroke-dasharray=\"4\"><title>liveness phase from %v</title></line>\n",
			v.xpos(lf), v.xpos(lf), l.height, lf)
	}
	for _, w := range vs {
		if !v.in(w.At, w.At) {
			continue
		}
		width := 2
		if v.focus != 0 && w.Timer == v.focus {
			width = 3
		}
		fmt.Fprintf(b, "<line class=\"violation\" x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%d\"><title>%s</title></line>\n",
			v.xpos(w.At), v.xpos(w.At), l.height, colorViolation, width, esc(describe(w)))
	}
	fmt.Fprintf(b, "</svg>\n")
}

// svgAxis writes the row labels and ten time ticks across the view.
func (x *index) svgAxis(b *bufio.Writer, v svgView, l svgLayout) {
	for i, label := range l.labels {
		fmt.Fprintf(b, "<text x=\"2\" y=\"%d\">%s</text><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/>\n",
			ypos(i)+14, esc(label), svgLabelWidth, svgWidth, ypos(i)+svgRowHeight, ypos(i)+svgRowHeight)
	}
	// Ticks are rounded to the largest round unit below a hundredth of
	// the view, so that they read 36m0s or 1.1s, not 36m0.000512s.
	round := time.Duration(1)
	for _, u := range tickUnits {
		if u*100 <= v.to-v.from {
			round = u
		}
	}
	for i := 0; i <= 10; i++ {
		t := v.from + (v.to-v.from)*time.Duration(i)/10
		anchor := map[int]string{0: "start", 10: "end"}[i]
		if anchor == "" {
			anchor = "middle"
		}
		fmt.Fprintf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%v</text>\n", v.xpos(t), l.height-4, anchor, t.Round(round))
	}
}

// svgDue shades the followed timer's due windows on its row: where each
// pop may fall due, from the write's invoke to its return.
func (x *index) svgDue(b *bufio.Writer, v svgView) {
	drawn := 0
	for _, d := range v.defs {
		for k := 1; k <= d.op.Spec.Pops() && drawn < maxSVGDue; k++ {
			lo, hi := d.due(k)
			if lo > v.to {
				break
			}
			if !v.in(lo, hi) {
				continue
			}
			drawn++
			fmt.Fprintf(b, "<rect class=\"due\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s pop %d due %v..%v</title></rect>\n",
				v.xpos(lo), ypos(0), max(v.xpos(hi)-v.xpos(lo), 2), svgRowHeight-4, colorDue, esc(fmt.Sprintf("%q", d.op.Spec.Opaque)), k, lo, hi)
		}
	}
}

func (x *index) svgFaults(b *bufio.Writer, v svgView, l svgLayout) {
	for _, s := range x.tl.spans {
		if !v.in(s.from, s.end) {
			continue
		}
		targets := append(append([]string(nil), s.fault.Nodes...), s.fault.Peers...)
		if len(targets) == 0 {
			targets = []string{""}
		}
		w := max(v.xpos(s.end)-v.xpos(s.from), 2)
		for _, n := range targets {
			fmt.Fprintf(b, "<rect class=\"fault\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" opacity=\"0.7\"><title>%s %v..%v</title></rect>\n",
				v.xpos(s.from), ypos(l.row[n]), w, svgRowHeight-4, faultColorOf(s.fault.Kind), esc(faultText(s.fault)), s.from, s.end)
		}
	}
}

func faultColorOf(k FaultKind) string {
	if c, ok := faultColor[k]; ok {
		return c
	}
	return "#bdbdbd"
}

// mark is how an op or pop is drawn: large for the followed timer, faded
// for the others, plain when the view follows none.
func (v svgView) mark(timer uint64) (class string, opacity float64, scale int) {
	switch {
	case v.focus == 0:
		return "", 1, 1
	case timer == v.focus:
		return " focus", 1, 2
	default:
		return "", 0.3, 1
	}
}

func (x *index) svgOps(b *bufio.Writer, v svgView, l svgLayout) {
	for _, op := range x.h.Ops {
		end := op.Return
		if op.Outcome == Unknown && end <= op.Invoke {
			end = x.end
		}
		if !v.in(op.Invoke, end) {
			continue
		}
		class, opacity, scale := v.mark(op.Timer)
		y := ypos(l.clientRow[op.Client%maxSVGClients]) + svgRowHeight/2
		fmt.Fprintf(b, "<line class=\"op%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%d\" opacity=\"%.1f\"><title>%s</title></line>\n",
			class, v.xpos(op.Invoke), max(v.xpos(end), v.xpos(op.Invoke)+2), y, y, opColor[op.Outcome], 5*scale, opacity, esc(opText(op)))
	}
}

func (x *index) svgPops(b *bufio.Writer, v svgView, l svgLayout) {
	drawn := 0
	for _, p := range x.h.Pops {
		if !v.in(p.At, p.At) {
			continue
		}
		if drawn == maxSVGPops {
			break
		}
		drawn++
		fill := colorAccepted
		if !accepted(p) {
			fill = colorRefused
		}
		class, opacity, scale := v.mark(x.popTimer(p))
		fmt.Fprintf(b, "<circle class=\"pop%s\" cx=\"%.1f\" cy=\"%d\" r=\"%d\" fill=\"%s\" opacity=\"%.1f\"><title>%v pop seq %d %s from %s, answered %d</title></circle>\n",
			class, v.xpos(p.At), ypos(l.row[p.Node])+svgRowHeight/2, 3*scale, fill, opacity, p.At, p.Seq, esc(fmt.Sprintf("%q", p.Opaque)), esc(p.Node), p.Answered)
	}
}
