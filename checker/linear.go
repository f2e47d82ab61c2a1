package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// linKind is the kind of an operation in the porcupine model.
type linKind int

const (
	linPut linKind = iota + 1
	linDelete
	linPop
)

// linInput is the input of one porcupine operation. Outputs are unused:
// a pop's observation (the opaque it carried) is part of its input.
type linInput struct {
	Key    string
	Timer  uint64
	Kind   linKind
	Opaque string
	Desc   string
}

// linState is the model's state for one timer: the current definition.
type linState struct {
	Opaque string
	Live   bool
}

// LinearizabilityInfo is what the porcupine check found.
type LinearizabilityInfo struct {
	// Result is porcupine's answer: Ok, Illegal, or Unknown when the
	// search of some timer ran out of steps (Options.LinearizabilitySteps).
	Result porcupine.CheckResult
	// Note explains an Unknown result or what was left out.
	Note string
	// Partitions is how many per-timer histories were checked, Operations
	// how many operations they held, Excluded how many pop observations
	// were left out because a fault touched them or the writes before them.
	Partitions, Operations, Excluded int
	// MostSteps is the most model steps the search of one timer took.
	MostSteps int
	// Violations are the G5 violations, one per non-linearizable timer.
	Violations []Violation
	// Model and Info feed porcupine.Visualize.
	Model porcupine.Model
	Info  porcupine.LinearizationInfo
}

// Model returns the porcupine model of one timer: create and update make
// their definition current, delete makes none current, and a pop
// observation is legal only while the definition it carried is current.
// Histories are partitioned by timer.
func Model() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() interface{} { return linState{} },
		Step: func(state, input, _ interface{}) (bool, interface{}) {
			s, in := state.(linState), input.(linInput)
			switch in.Kind {
			case linPut:
				return true, linState{Opaque: in.Opaque, Live: true}
			case linDelete:
				return true, linState{}
			}
			return s.Live && s.Opaque == in.Opaque, s
		},
		DescribeOperation: func(input, _ interface{}) string { return input.(linInput).Desc },
		DescribeState: func(state interface{}) string {
			if s := state.(linState); s.Live {
				return fmt.Sprintf("current %q", s.Opaque)
			}
			return "no timer"
		},
	}
}

func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(linInput).Key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

// Linearizable checks the per-timer porcupine model on h with the default
// options. An Unknown result (a search out of steps) counts as
// linearizable here, with a note; Check reports it as a CHECK violation.
func Linearizable(h *History) (ok bool, info LinearizabilityInfo) {
	return DefaultOptions().Linearizable(h)
}

// Linearizable checks the per-timer porcupine model on h.
func (o Options) Linearizable(h *History) (bool, LinearizabilityInfo) {
	o.mustValidate()
	info := o.linearizable(newIndex(h, o))
	return info.Result != porcupine.Illegal, info
}

func (o Options) linearizable(x *index) LinearizabilityInfo {
	if x.unjudged != "" {
		return LinearizabilityInfo{Model: Model(), Result: porcupine.Unknown, Note: x.unjudged}
	}
	ops, excluded := x.linOps()
	info := LinearizabilityInfo{Model: Model(), Operations: len(ops), Excluded: excluded}
	info.Partitions = len(partitionByKey(ops))
	m, budget := o.budgeted(ops)
	info.Result, info.Info = porcupine.CheckOperationsVerbose(m, ops, 0)
	info.MostSteps = budget.most()
	undecided := budget.exhausted()
	if info.Result == porcupine.Illegal {
		// A timer whose search ran out of steps fails as illegal;
		// only the others that fail are.
		info.Violations = o.illegalTimers(ops)
		info.Result = porcupine.Ok
		if len(info.Violations) > 0 {
			info.Result = porcupine.Illegal
		}
	}
	if len(undecided) > 0 {
		info.Result = porcupine.Unknown
		info.Note = fmt.Sprintf("porcupine ran out of its %d steps on %d timers (%s): they were not judged",
			o.LinearizabilitySteps, len(undecided), strings.Join(undecided, ", "))
	}
	if excluded > 0 {
		info.Note = joinNote(info.Note, fmt.Sprintf("%d pop observations left out: a fault touched them or a write before them", excluded))
	}
	return info
}

// linBudget counts the model steps of each timer's search, so that a
// search stops after a fixed number of steps, the same on every machine,
// instead of after a wall-clock time. Porcupine searches the partitions in
// parallel, one goroutine each; the counters are made before the search
// and each is touched by its own partition's goroutine only.
type linBudget struct {
	limit int
	steps map[string]*int
}

// budgeted is the model of Model, with each timer's steps counted in a
// fresh budget: once a timer's search has taken its LinearizabilitySteps,
// every further step of it is refused, so the search unwinds at once, and
// the budget names the timer as undecided.
func (o Options) budgeted(ops []porcupine.Operation) (porcupine.Model, *linBudget) {
	b := &linBudget{limit: o.LinearizabilitySteps, steps: map[string]*int{}}
	for _, op := range ops {
		if k := op.Input.(linInput).Key; b.steps[k] == nil {
			b.steps[k] = new(int)
		}
	}
	m := Model()
	step := m.Step
	m.Step = func(state, input, output interface{}) (bool, interface{}) {
		n := b.steps[input.(linInput).Key]
		if *n++; *n > b.limit {
			return false, state
		}
		return step(state, input, output)
	}
	return m, b
}

// exhausted lists the partitions whose search ran out of steps, sorted.
func (b *linBudget) exhausted() []string {
	var out []string
	for k, n := range b.steps {
		if *n > b.limit {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// most is the most steps one partition's search took, up to the limit.
func (b *linBudget) most() int {
	m := 0
	for _, n := range b.steps {
		m = max(m, min(*n, b.limit))
	}
	return m
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// illegalTimers checks each timer alone, within its budget of steps, to
// name the ones that fail (not those whose search ran out), and dates
// each failure by the earliest return the longest partial linearization
// could not take in.
func (o Options) illegalTimers(ops []porcupine.Operation) []Violation {
	var vs []Violation
	for _, part := range partitionByKey(ops) {
		m, budget := o.budgeted(part)
		m.Partition = nil
		res, info := porcupine.CheckOperationsVerbose(m, part, 0)
		if res != porcupine.Illegal || len(budget.exhausted()) > 0 {
			continue
		}
		culprit := firstUnlinearized(part, info)
		in := culprit.Input.(linInput)
		vs = append(vs, Violation{Guarantee: "G5", At: time.Duration(culprit.Return), Timer: in.Timer,
			Message: fmt.Sprintf("porcupine: history of %s is not linearizable; no linearization can take in %q (called %v, returned %v): got an illegal history, want a linearizable one",
				in.Key, in.Desc, time.Duration(culprit.Call), time.Duration(culprit.Return))})
	}
	return vs
}

// firstUnlinearized returns the operation with the earliest return that a
// longest partial linearization leaves out; among several longest ones the
// earliest such return wins, so the answer does not depend on the order
// porcupine lists them in.
func firstUnlinearized(part []porcupine.Operation, info porcupine.LinearizationInfo) porcupine.Operation {
	var pls [][]int
	if all := info.PartialLinearizations(); len(all) > 0 {
		pls = all[0]
	}
	longest := 0
	for _, pl := range pls {
		longest = max(longest, len(pl))
	}
	best := -1
	for _, pl := range pls {
		if len(pl) != longest {
			continue
		}
		if c := leftOut(part, pl); c >= 0 && (best < 0 || part[c].Return < part[best].Return ||
			part[c].Return == part[best].Return && c < best) {
			best = c
		}
	}
	if best < 0 {
		best = len(part) - 1
	}
	return part[best]
}

// leftOut is the index of the earliest-returning operation not in pl.
func leftOut(part []porcupine.Operation, pl []int) int {
	in := make(map[int]bool, len(pl))
	for _, id := range pl {
		in[id] = true
	}
	best := -1
	for i, op := range part {
		if !in[i] && (best < 0 || op.Return < part[best].Return) {
			best = i
		}
	}
	return best
}

// linOps turns the history into porcupine operations: every write that did
// not fail (an unknown outcome returns after the end of history, so it may
// take effect any time after its invocation, or never), and every pop
// observation with its window [due - skew, delivery]. Per timer, pops are
// kept only while no fault has touched them or any write before them,
// since a write cut by a fault may legitimately leave a stale replica
// popping the old definition (G5 excuses that).
func (x *index) linOps() ([]porcupine.Operation, int) {
	taint := x.taints()
	clients := 0
	for _, op := range x.h.Ops {
		clients = max(clients, op.Client+1)
	}
	var ops []porcupine.Operation
	for _, op := range x.h.Ops {
		if op.Outcome == Failed {
			continue // a rejected write changed nothing; its pops are sticky.go's
		}
		in, ok := x.writeInput(op)
		x.recordWrite(op, x.writeVerdict(op, in, ok, taint))
		if !ok || op.Invoke >= taint[in.Key] {
			continue
		}
		ret := op.Return
		if op.Outcome == Unknown || ret < op.Invoke {
			ret = x.end + 1
		}
		ops = append(ops, porcupine.Operation{ClientId: max(op.Client, 0), Input: in,
			Call: int64(op.Invoke), Return: int64(ret)})
	}
	nodes := nodeIndex(x.h)
	excluded := 0
	for _, d := range x.defs {
		for _, seq := range sortedSeqs(d) {
			for _, i := range d.bySeq[seq] {
				p := x.h.Pops[i]
				_, b := x.window(d, max(seq, 1))
				if t, ok := taint[d.key]; ok && p.At >= t || x.popTouched(d, max(seq, 1), max(b, p.At)) {
					excluded++
					continue
				}
				ops = append(ops, x.popOp(d, seq, p, clients+nodes[p.Node]))
			}
		}
	}
	return ops, excluded
}

// writeVerdict is op's G5 verdict as the model takes it: a write it
// leaves out (no timer to key it by, or a write after a fault hit the
// timer's) is excused, and so is one a fault hit itself, by that fault
// (or by site-lag), whenever that fault keeps it from a replica: an
// update or delete, or a write the model leaves out. A create the model
// keeps despite its fault is held strictly by the model.
func (x *index) writeVerdict(op Op, in linInput, ok bool, taint map[string]time.Duration) verdict {
	if !ok {
		return excused(ExUnknownWrite) // a delete of a timer the client never learned
	}
	tainted := op.Invoke >= taint[in.Key]
	if _, hit, why := x.writeHitBy(op); hit && (tainted || op.Kind != Create && op.Outcome == OK) {
		if why != "" {
			return excused(why)
		}
		return excused(ExFault + "/write")
	}
	if tainted {
		return excused(ExLinTaint)
	}
	return strictly
}

func (x *index) popOp(d *def, seq int, p Pop, client int) porcupine.Operation {
	lo, _ := d.due(max(seq, 1))
	call := min(lo-x.h.MaxClockSkew, p.At)
	return porcupine.Operation{ClientId: client, Call: int64(call), Return: int64(p.At), Input: linInput{
		Key: d.key, Timer: d.op.Timer, Kind: linPop, Opaque: p.Opaque,
		Desc: fmt.Sprintf("pop %d %q from %s", seq, p.Opaque, p.Node)}}
}

// writeInput describes a client write, false for one that changed nothing
// or names no timer.
func (x *index) writeInput(op Op) (linInput, bool) {
	if op.Outcome == Failed || op.Kind == Delete && op.Timer == 0 {
		return linInput{}, false
	}
	if op.Kind == Delete {
		key, ok := x.keyOf[op.Seq]
		if !ok {
			key = timerKey(op.Timer)
		}
		return linInput{Key: key, Timer: op.Timer, Kind: linDelete,
			Desc: fmt.Sprintf("op %d delete (%s)", op.Seq, op.Outcome)}, true
	}
	d := x.byOpaque[op.Spec.Opaque]
	if d == nil || d.op.Seq != op.Seq {
		return linInput{}, false // a reused opaque: attribution is ambiguous
	}
	return linInput{Key: d.key, Timer: op.Timer, Kind: linPut, Opaque: op.Spec.Opaque,
		Desc: fmt.Sprintf("op %d %s %q (%s)", op.Seq, op.Kind, op.Spec.Opaque, op.Outcome)}, true
}

// taints returns, per partition key, when the first fault hit one of its
// writes (see writeHit; never when none did).
func (x *index) taints() map[string]time.Duration { return x.taint }

// epochs splits each timer's porcupine history at clean writes: once a
// fault hit a write of the timer, the model leaves out its later pops (a
// replica the write missed may rightly pop the old definition), but an
// acknowledged write that no fault hit, issued when every earlier write of
// the timer had returned, reaches every replica with the newest version,
// so the timer's history starts over from it under a new partition key
// ("timer <id> #2"). It sets keyOf (each write's key) and taint.
func (x *index) epochs() {
	x.keyOf, x.taint = map[int]string{}, map[string]time.Duration{}
	ops := append([]Op(nil), x.h.Ops...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Seq < ops[j].Seq })
	type state struct {
		key     string
		epoch   int
		pending time.Duration // the latest return of a write so far
	}
	timers := map[string]*state{}
	for _, op := range ops {
		if op.Outcome == Failed || op.Kind == Delete && op.Timer == 0 {
			continue
		}
		base := timerKey(op.Timer)
		if op.Kind != Delete {
			d := x.byOpaque[op.Spec.Opaque]
			if d == nil || d.op.Seq != op.Seq {
				continue
			}
			base = d.key
		}
		st := timers[base]
		if st == nil {
			st = &state{key: base}
			timers[base] = st
			x.taint[base] = never
		}
		at, hit := x.writeHit(op)
		if !hit {
			at, hit = x.replacedDefHit(op)
		}
		if x.taint[st.key] < never && !hit && op.Outcome == OK && st.pending < op.Invoke && op.Timer != 0 {
			st.epoch++
			st.key = fmt.Sprintf("%s #%d", base, st.epoch+1)
			x.taint[st.key] = never
		}
		x.keyOf[op.Seq] = st.key
		if hit {
			x.taint[st.key] = min(x.taint[st.key], at)
		}
		st.pending = max(st.pending, min(effReturn(op), x.end+1))
	}
	for _, d := range x.defs {
		if k, ok := x.keyOf[d.op.Seq]; ok {
			d.key = k
		}
	}
}

// replacedDefHit reports whether a fault may have kept update op from a
// replica of a definition it replaced, one that is no replica of op's
// own (a factor the update lowered, a scale): that replica pops the old
// definition until it is repaired, as checkSticky judges (replacedHit,
// unrepaired), so the timer leaves the model as for any write a fault
// hit. Fresh seed 9508166 (scenarios/README.md C66): an update to rf 1
// whose word to the replica it dropped was blocked; its one replica's
// disk was wiped, and it took the old definition back from the dropped
// replica and popped it an hour on.
func (x *index) replacedDefHit(op Op) (time.Duration, bool) {
	if op.Kind != Update || op.Outcome != OK {
		return never, false
	}
	at, hit := never, false
	for _, d := range x.defsOf(op.Timer) {
		if d.op.Seq == op.Seq || d.op.Outcome == Failed || effReturn(d.op) >= op.Invoke {
			continue
		}
		if a, h, _ := x.defWriteHit(op, d); h && a < at {
			at, hit = a, true
		}
	}
	return at, hit
}

func timerKey(t uint64) string { return fmt.Sprintf("timer %016x", t) }

// nodeIndex numbers the nodes that popped, in name order.
func nodeIndex(h *History) map[string]int {
	var names []string
	seen := map[string]bool{}
	for _, p := range h.Pops {
		if !seen[p.Node] {
			seen[p.Node] = true
			names = append(names, p.Node)
		}
	}
	sort.Strings(names)
	idx := make(map[string]int, len(names))
	for i, n := range names {
		idx[n] = i
	}
	return idx
}
