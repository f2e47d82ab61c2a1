package checker

import (
	"bufio"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Limits of the HTML report's per-timer sections, so that a history of
// 20,000 pops still makes a page a browser opens.
const (
	// maxReportTimers caps the timer sections: the timers the violations
	// name come first, then the others by ID.
	maxReportTimers = 40
	// maxReportPops caps the due pops listed per timer.
	maxReportPops = 60
	// maxReportTrace caps the trace lines listed per timer.
	maxReportTrace = 80
)

// TraceLine is one line of the simulator's trace (its text starts with
// its time), for the report to show the messages around a timer's pops.
type TraceLine struct {
	At   time.Duration
	Text string
}

// writeVerdict opens the page with what failed and why: the unmet
// expectations, a panic, or the violations by guarantee with the first
// one's reason; or that the run passed.
func writeVerdict(b *bufio.Writer, vs []Violation, r ReportHeader) {
	failed := len(vs) > 0 || len(r.Unmet) > 0 || r.Panic != ""
	class, word := "pass", "PASSED"
	if failed {
		class, word = "fail", "FAILED"
	}
	fmt.Fprintf(b, "<div class=\"verdict %s\"><h2>%s</h2>\n", class, word)
	if r.Panic != "" {
		fmt.Fprintf(b, "<p><b>panic:</b> <code>%s</code></p>\n", esc(firstLineOf(r.Panic)))
	}
	for _, u := range r.Unmet {
		fmt.Fprintf(b, "<p><b>unmet expectation:</b> %s</p>\n", esc(u))
	}
	if len(vs) > 0 {
		v := vs[0]
		fmt.Fprintf(b, "<p><b>%s</b> (%s): <a href=\"#v0\">first violation</a> at %v%s: %s</p>\n",
			esc(v.Guarantee), esc(guaranteeName[v.Guarantee]), v.At, timerLink(v.Timer), esc(v.Message))
		fmt.Fprintf(b, "<p>violations: %s</p>\n", esc(countByGuarantee(vs)))
	}
	if !failed {
		fmt.Fprintf(b, "<p>no violation, every expectation met</p>\n")
	}
	fmt.Fprintf(b, "</div>\n")
}

// guaranteeName says what each guarantee is, for readers of a report.
var guaranteeName = map[string]string{
	"G1": "no early pop", "G2": "no lost pop", "G3": "timeliness", "G4": "at most once when healthy",
	"G5": "deletes and updates stick", "G6": "placement converges", "G7": "liveness after faults",
	"API": "protocol", "TAGS": "statistics", "CHECK": "not judged",
	"STORM": "message storm",
}

func timerLink(t uint64) string {
	if t == 0 {
		return ""
	}
	return fmt.Sprintf(" on timer <a href=\"#timer-%016x\">%016x</a>", t, t)
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// writeLegend explains the timeline's marks and colours.
func writeLegend(b *bufio.Writer) {
	fmt.Fprintf(b, "<details class=\"legend\"><summary>Legend</summary><table>\n")
	kinds := make([]string, 0, len(faultColor))
	for k := range faultColor {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(b, "<tr><td><span class=\"swatch\" style=\"background:%s\"></span></td><td>fault: %s</td></tr>\n",
			faultColorOf(FaultKind(k)), esc(k))
	}
	for _, row := range [][2]string{
		{colorAccepted, "pop the endpoint accepted (2xx)"},
		{colorRefused, "pop the endpoint refused"},
		{opColor[OK], "client operation that succeeded, invocation to return"},
		{opColor[Failed], "client operation that failed"},
		{opColor[Unknown], "client operation of unknown outcome (no answer)"},
		{colorDue, "due window of the followed timer's pop: when it may fall due, from its write's invocation to its return"},
		{colorViolation, "violation (the followed timer's drawn thicker)"},
	} {
		fmt.Fprintf(b, "<tr><td><span class=\"swatch\" style=\"background:%s\"></span></td><td>%s</td></tr>\n", row[0], row[1])
	}
	fmt.Fprintf(b, "</table><p>Faults shaded on a node's row are the faults the checker attributes to that node; "+
		"message faults (lost, duplicated, reordered) name the timer they hit.</p></details>\n")
}

// writeCoverage reports how much of the run was judged strictly and what
// excused the rest.
func (x *index) writeCoverage(b *bufio.Writer) {
	c := x.coverage()
	fmt.Fprintf(b, "<h2>Judged coverage</h2>\n<pre>%s</pre>\n", esc(c.String()))
}

// writeTimers writes a section per timer: its replicas by rank, its
// writes, its due pops against the deliveries, the faults that touched
// it, and the trace lines that name it.
func (x *index) writeTimers(b *bufio.Writer, vs []Violation, trace []TraceLine) {
	byTimer := map[uint64][]*def{}
	for _, d := range x.defs {
		if d.timer != 0 {
			byTimer[d.timer] = append(byTimer[d.timer], d)
		}
	}
	var order []uint64
	named := map[uint64]bool{}
	for _, v := range vs {
		if v.Timer != 0 && !named[v.Timer] && byTimer[v.Timer] != nil {
			named[v.Timer] = true
			order = append(order, v.Timer)
		}
	}
	var rest []uint64
	for t := range byTimer {
		if !named[t] {
			rest = append(rest, t)
		}
	}
	slices.Sort(rest)
	order = append(order, rest...)
	fmt.Fprintf(b, "<h2>Timers (%d)</h2>\n", len(order))
	for i, t := range order {
		if i == maxReportTimers {
			fmt.Fprintf(b, "<p>... %d more timers not shown</p>\n", len(order)-i)
			break
		}
		open := ""
		if named[t] {
			open = " open"
		}
		fmt.Fprintf(b, "<details id=\"timer-%016x\"%s><summary>timer <code>%016x</code>%s</summary>\n", t, open, t, map[bool]string{true: " (violated)"}[named[t]])
		x.writeTimer(b, t, byTimer[t], vs, trace)
		fmt.Fprintf(b, "</details>\n")
	}
}

// writeTimer writes timer t's section: its violations first, then its
// replicas, writes, due pops, faults and trace lines.
func (x *index) writeTimer(b *bufio.Writer, t uint64, defs []*def, vs []Violation, trace []TraceLine) {
	var mine []string
	for _, v := range vs {
		if v.Timer == t {
			mine = append(mine, fmt.Sprintf("<b>%s</b> at %v: %s", esc(v.Guarantee), v.At, esc(v.Message)))
		}
	}
	if len(mine) > 0 {
		fmt.Fprintf(b, "<div class=\"verdict fail\"><p>violations of this timer: %d</p><p>%s</p></div>\n", len(mine), strings.Join(capLines(mine, maxReportPops), "<br>"))
	}
	d0 := defs[0]
	fmt.Fprintf(b, "<p>replicas (reference placement, rank order): ")
	if !d0.placed {
		fmt.Fprintf(b, "unknown (no membership in the history)")
	}
	for i, r := range d0.replicas {
		role := "primary"
		if i > 0 {
			role = fmt.Sprintf("backup %d", i)
		}
		fmt.Fprintf(b, "<code>%s</code> (%s) ", esc(r), role)
	}
	fmt.Fprintf(b, "</p>\n<table class=\"wide\"><tr><th>op</th><th>kind</th><th>via</th><th>invoke</th><th>return</th><th>outcome</th><th>definition</th></tr>\n")
	for _, op := range x.byTimer[t] {
		fmt.Fprintf(b, "<tr><td>%d</td><td>%s</td><td>%s</td><td class=\"nowrap\">%v</td><td class=\"nowrap\">%v</td><td>%s</td><td class=\"msg\">%s</td></tr>\n",
			op.Seq, op.Kind, esc(op.Node), op.Invoke, op.Return, op.Outcome, esc(specText(op)))
	}
	fmt.Fprintf(b, "</table>\n")
	for _, d := range defs {
		x.writeDuePops(b, d, vs)
	}
	var faults []string
	seen := map[string]bool{}
	for _, d := range defs {
		for s := range d.spans() {
			txt := fmt.Sprintf("%v..%v %s", s.from, s.end, faultText(s.fault))
			if !seen[txt] {
				seen[txt] = true
				faults = append(faults, txt)
			}
		}
	}
	fmt.Fprintf(b, "<p>faults that touched this timer: %d</p>\n", len(faults))
	if len(faults) > 0 {
		fmt.Fprintf(b, "<pre>%s</pre>\n", esc(strings.Join(capLines(faults, maxReportTrace), "\n")))
	}
	if len(trace) > 0 {
		needle := fmt.Sprintf("%016x", t)
		var lines []string
		for _, l := range trace {
			if strings.Contains(l.Text, needle) || strings.Contains(l.Text, d0.op.Spec.Opaque+" ") {
				lines = append(lines, l.Text)
			}
		}
		fmt.Fprintf(b, "<p>trace lines naming this timer (replication, notices, pops): %d</p>\n", len(lines))
		if len(lines) > 0 {
			fmt.Fprintf(b, "<pre class=\"trace\">%s</pre>\n", esc(strings.Join(capLines(lines, maxReportTrace), "\n")))
		}
	}
}

// writeDuePops lists the due pops of d against their deliveries, each
// judged: the violations the checks find on it, or, when none, how each
// of G2, G3 and G4 held it (strictly, or excused and why).
func (x *index) writeDuePops(b *bufio.Writer, d *def, vs []Violation) {
	n := d.op.Spec.Pops()
	fmt.Fprintf(b, "<p>definition %s (op %d, %s): %d pops due</p>\n", esc(fmt.Sprintf("%q", d.op.Spec.Opaque)), d.op.Seq, d.op.Outcome, n)
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "<p class=\"note\">A pop's due window runs from its due time counted from the write's invocation to the one counted "+
		"from its return: the write took effect somewhere in between. Lateness is counted from the window's end, so a pop "+
		"inside the window is on time (it could not fall due later); only one before the window opens is early (G1, "+
		"less what a forward clock jump or drift explains).</p>\n")
	fmt.Fprintf(b, "<table class=\"wide\"><tr><th>seq</th><th>due window</th><th>deliveries: time, node (rank), answer, timeliness</th><th>judged</th></tr>\n")
	for k := 1; k <= n && k <= maxReportPops; k++ {
		lo, hi := d.due(k)
		if lo > x.end {
			break
		}
		var cells []string
		for _, i := range d.bySeq[k] {
			p := x.h.Pops[i]
			rank := slices.Index(d.replicas, p.Node)
			rk := "not a replica"
			if rank >= 0 {
				rk = fmt.Sprintf("rank %d", rank)
			}
			cells = append(cells, esc(fmt.Sprintf("%v %s (%s) answered %d, ", p.At, p.Node, rk, p.Answered))+timeliness(p.At, lo, hi))
		}
		what := "missing"
		if len(cells) > 0 {
			what = strings.Join(cells, "<br>")
		}
		fmt.Fprintf(b, "<tr><td>%d</td><td class=\"nowrap\">%v..%v</td><td class=\"msg\">%s</td>%s</tr>\n", k, lo, hi, what, x.judgedCell(d, k, vs))
	}
	fmt.Fprintf(b, "</table>\n")
	if n > maxReportPops {
		fmt.Fprintf(b, "<p>... %d more due pops not shown</p>\n", n-maxReportPops)
	}
}

// timeliness says where a delivery at t fell against its due window
// [lo, hi], as HTML.
func timeliness(t, lo, hi time.Duration) string {
	switch {
	case t > hi:
		return esc(fmt.Sprintf("%v late (after its due window)", t-hi))
	case t >= lo:
		return esc(fmt.Sprintf("on time (in its due window, %v before its end)", hi-t))
	default:
		return "<span class=\"early\">" + esc(fmt.Sprintf("%v early (before its due window opens)", lo-t)) + "</span>"
	}
}

// judgedCell is the judged cell of pop k of d: the violations the checks
// found about it (and the G5 violations of its deliveries, among vs),
// with no excuse beside them; or the verdict each guarantee gave it.
func (x *index) judgedCell(d *def, k int, vs []Violation) string {
	pv := x.verdicts[popKey{d, k}]
	var broke []Violation
	if pv != nil {
		broke = append(broke, pv.broke...)
	}
	for _, v := range vs {
		if v.Guarantee != "G5" || v.Timer != d.op.Timer {
			continue
		}
		for _, i := range d.bySeq[k] {
			if x.h.Pops[i].At == v.At && !slices.Contains(broke, v) {
				broke = append(broke, v)
			}
		}
	}
	if len(broke) > 0 {
		var lines []string
		for _, v := range broke {
			lines = append(lines, "<b>VIOLATED "+esc(v.Guarantee)+"</b> ("+esc(guaranteeName[v.Guarantee])+"): "+esc(v.Message))
		}
		return "<td class=\"msg violated\">" + strings.Join(lines, "<br>") + "</td>"
	}
	var judged []string
	if pv != nil {
		for col, g := range columnName {
			v, set := pv.v[col], pv.set[col]
			if !set && col == colG3 {
				v, set = pv.v[colG2], pv.set[colG2] // never delivered: judged by G2
			}
			switch {
			case !set:
			case v.excuse != "":
				judged = append(judged, g+" excused: "+string(v.excuse))
			case !v.violated:
				judged = append(judged, g+" strict")
			}
		}
	}
	return "<td class=\"msg\">" + esc(strings.Join(judged, ", ")) + "</td>"
}

func specText(op Op) string {
	if op.Kind == Delete {
		return ""
	}
	s := op.Spec
	return fmt.Sprintf("%q every %v for %v, rf %d, %s", s.Opaque, s.Interval, s.RepeatFor, s.ReplicationFactor, s.URI)
}

func capLines(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	return append(lines[:n:n], fmt.Sprintf("... %d more", len(lines)-n))
}
