package checker

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// ReportHeader is what a report says about the run besides its history.
type ReportHeader struct {
	Seed int64
	// FaultMix names the faults the run could inject, e.g.
	// "crash,partition,clock-jump".
	FaultMix string
	// ReplayCommand reproduces the run, one line.
	ReplayCommand string
	// TraceHash is the hash of the run's trace (the determinism proof).
	TraceHash string
	// Unmet are the scenario expectations that did not hold, and Panic
	// a panic that ended the run: the HTML report leads with them.
	Unmet []string
	Panic string
	// Trace, when set, is the run's trace: the HTML report shows the
	// lines that name each timer.
	Trace []TraceLine
}

// event is one line of a report's event list.
type event struct {
	At    time.Duration
	Kind  string // "op", "return", "pop" or a fault kind
	Node  string
	Timer uint64
	Text  string
}

// WriteReport writes a plain-text failure report with DefaultOptions.
func WriteReport(w io.Writer, h *History, vs []Violation, r ReportHeader) error {
	return DefaultOptions().WriteReport(w, h, vs, r)
}

// WriteReport writes a plain-text failure report: the run's header, a
// summary per guarantee, the first violation with the events around it in
// time order, every violation, and the replay command.
func (o Options) WriteReport(w io.Writer, h *History, vs []Violation, r ReportHeader) error {
	o.mustValidate()
	x := newIndex(h, o)
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "Chronos checker report\n\nseed:       %d\nfault mix:  %s\ntrace hash: %s\nreplay:     %s\n",
		r.Seed, orNone(r.FaultMix), orNone(r.TraceHash), orNone(r.ReplayCommand))
	fmt.Fprintf(b, "history:    %s\n", x.summary())
	fmt.Fprintf(b, "violations: %s\n", countByGuarantee(vs))
	if len(vs) > 0 {
		v := vs[0]
		fmt.Fprintf(b, "\nFIRST VIOLATION: %s\n  %s\n", v.Guarantee, describe(v))
		from, to := v.At-o.ReportWindow, v.At+o.ReportWindow
		evs := x.eventsAround(v, from, to)
		fmt.Fprintf(b, "\nevents %v..%v%s, in time order:\n", from, to, scope(v))
		for i, e := range evs {
			if i == o.MaxReportEvents {
				fmt.Fprintf(b, "  ... %d more\n", len(evs)-i)
				break
			}
			fmt.Fprintf(b, "  %12v  %-12s %s\n", e.At, e.Kind, e.Text)
		}
		fmt.Fprintf(b, "\nall violations:\n")
		for _, v := range vs {
			fmt.Fprintf(b, "  %s\n", describe(v))
		}
	}
	fmt.Fprintf(b, "\nreplay: %s\n", orNone(r.ReplayCommand))
	return b.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func scope(v Violation) string {
	if v.Timer == 0 {
		return " (everything)"
	}
	return fmt.Sprintf(" (timer %016x, its writes at any time, all faults)", v.Timer)
}

// describe is one violation on one line.
func describe(v Violation) string {
	t := ""
	if v.Timer != 0 {
		t = fmt.Sprintf(" timer %016x", v.Timer)
	}
	return fmt.Sprintf("%s at %v%s: %s", v.Guarantee, v.At, t, v.Message)
}

func (x *index) summary() string {
	return fmt.Sprintf("%d ops, %d pops, %d faults, end %v, liveness from %v, max clock skew %v, max net delay %v",
		len(x.h.Ops), len(x.h.Pops), len(x.h.Faults), x.end, x.tl.liveFrom, x.h.MaxClockSkew, x.h.MaxNetDelay)
}

// countByGuarantee is e.g. "3 (G1: 1, G4: 2)".
func countByGuarantee(vs []Violation) string {
	if len(vs) == 0 {
		return "none"
	}
	n := map[string]int{}
	for _, v := range vs {
		n[v.Guarantee]++
	}
	gs := make([]string, 0, len(n))
	for g := range n {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = fmt.Sprintf("%s: %d", g, n[g])
	}
	return fmt.Sprintf("%d (%s)", len(vs), strings.Join(parts, ", "))
}

// events lists every op (invocation and return), pop and fault in time
// order; at equal times faults come first, then ops, then pops.
func (x *index) events() []event {
	var evs []event
	for _, f := range x.h.Faults {
		evs = append(evs, event{At: f.At, Kind: string(f.Kind), Text: faultText(f)})
	}
	for _, op := range x.h.Ops {
		evs = append(evs, event{At: op.Invoke, Kind: "op", Node: op.Node, Timer: op.Timer, Text: opText(op)})
		if op.Outcome != Unknown || op.Return > op.Invoke {
			evs = append(evs, event{At: op.Return, Kind: "return", Node: op.Node, Timer: op.Timer,
				Text: fmt.Sprintf("op %d %s -> %s (status %d)", op.Seq, op.Kind, op.Outcome, op.Status)})
		}
	}
	for _, p := range x.h.Pops {
		var timer uint64
		if d := x.byOpaque[p.Opaque]; d != nil {
			timer = d.op.Timer
		}
		evs = append(evs, event{At: p.At, Kind: "pop", Node: p.Node, Timer: timer, Text: fmt.Sprintf(
			"seq %d %q from %s (timer %016x), answered %d", p.Seq, p.Opaque, p.Node, timer, p.Answered)})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At < evs[j].At })
	return evs
}

// eventsAround lists the events a reader needs to judge v: within
// [from, to], every fault, and the ops and pops of v's timer (or all of
// them when v names no timer); the timer's writes appear at any time.
func (x *index) eventsAround(v Violation, from, to time.Duration) []event {
	var out []event
	for _, e := range x.events() {
		isWrite := e.Kind == "op" || e.Kind == "return"
		mine := v.Timer == 0 || e.Timer == v.Timer || e.Kind != "pop" && !isWrite
		inside := e.At >= from && e.At <= to
		if mine && (inside || isWrite && v.Timer != 0) {
			out = append(out, e)
		}
	}
	return out
}

func opText(op Op) string {
	s := fmt.Sprintf("op %d client %d -> %s: %s timer %016x", op.Seq, op.Client, op.Node, op.Kind, op.Timer)
	if op.Kind != Delete {
		s += fmt.Sprintf(" opaque %q interval %v repeat-for %v rf %d", op.Spec.Opaque, op.Spec.Interval,
			op.Spec.RepeatFor, op.Spec.ReplicationFactor)
	}
	return s + fmt.Sprintf(" [%v..%v] %s", op.Invoke, op.Return, op.Outcome)
}

func faultText(f Fault) string {
	s := string(f.Kind)
	if len(f.Nodes) > 0 {
		s += " " + strings.Join(f.Nodes, ",")
	}
	if len(f.Peers) > 0 {
		s += " | " + strings.Join(f.Peers, ",")
	}
	if f.Detail != "" {
		s += " (" + f.Detail + ")"
	}
	return s
}
