package sim

import (
	"fmt"
	"slices"
	"strings"
)

// MaxShrinkRuns bounds the runs one shrink may spend.
const MaxShrinkRuns = 600

// Shrink returns a smaller plan that fails the same way as p did (res):
// the same first guarantee broken, or a panic. It drops network noise,
// whole timers, then steps in halving chunks (delta debugging), then nodes,
// keeping each change only if the failure persists. It also reports how
// many runs it spent.
func Shrink(p *Plan, res *Result, progress func(string)) (*Plan, int) {
	want := failureKind(res)
	runs := 0
	fails := func(q *Plan) bool {
		if runs >= MaxShrinkRuns || q.Validate() != nil {
			return false
		}
		runs++
		return failureKind(Run(q, Options{})) == want
	}
	best := clonePlan(p)
	best.Name = p.Name + "-shrunk"
	best.Origin = ""
	if q := clonePlan(best); quiet(q) && fails(q) {
		best = q
	}
	for changed := true; changed && runs < MaxShrinkRuns; {
		changed = false
		for _, pass := range []func(*Plan, func(*Plan) bool) (*Plan, bool){dropTimers, dropSteps, dropNode} {
			var ok bool
			if best, ok = pass(best, fails); ok {
				changed = true
			}
			progress(fmt.Sprintf("%d steps, %d nodes after %d runs", len(best.Steps), best.Nodes, runs))
		}
	}
	return best, runs
}

// failureKind names how a run failed: "panic", the first violated
// guarantee, "unmet", or "" for a pass.
func failureKind(r *Result) string {
	switch {
	case !r.Failed():
		return ""
	case r.Panic != "":
		return "panic"
	case len(r.Violations) > 0:
		return firstViolation(r.Violations).Guarantee
	}
	return "unmet"
}

func clonePlan(p *Plan) *Plan {
	q := *p
	q.Steps = slices.Clone(p.Steps)
	q.Mix = slices.Clone(p.Mix)
	q.Expect = slices.Clone(p.Expect)
	q.Requires = slices.Clone(p.Requires)
	return &q
}

// quiet removes random network noise; it reports whether there was any.
func quiet(q *Plan) bool {
	o := &q.Net
	had := o.LossRate+o.DuplicateRate+o.ReorderRate > 0
	o.LossRate, o.DuplicateRate, o.ReorderRate = 0, 0, 0
	q.Mix = slices.DeleteFunc(q.Mix, func(k string) bool { return k == "loss" || k == "duplicate" || k == "reorder" })
	return had
}

// dropTimers tries removing every step of one timer label at a time.
func dropTimers(p *Plan, fails func(*Plan) bool) (*Plan, bool) {
	var labels []string
	for _, s := range p.Steps {
		if s.Timer != "" && !slices.Contains(labels, s.Timer) {
			labels = append(labels, s.Timer)
		}
	}
	changed := false
	for _, l := range labels {
		q := clonePlan(p)
		q.Steps = slices.DeleteFunc(q.Steps, func(s Step) bool { return s.Timer == l })
		if fails(q) {
			p, changed = q, true
		}
	}
	return p, changed
}

// dropSteps removes chunks of steps, halving the chunk size down to one.
func dropSteps(p *Plan, fails func(*Plan) bool) (*Plan, bool) {
	changed := false
	for size := max(len(p.Steps)/2, 1); size >= 1; size /= 2 {
		for i := 0; i < len(p.Steps); {
			q := clonePlan(p)
			q.Steps = slices.Delete(q.Steps, i, min(i+size, len(q.Steps)))
			if fails(q) {
				p, changed = q, true
				continue
			}
			i += size
		}
	}
	return p, changed
}

// dropNode removes the highest-numbered node if no step names it.
func dropNode(p *Plan, fails func(*Plan) bool) (*Plan, bool) {
	if p.Nodes <= 1 {
		return p, false
	}
	last := fmt.Sprintf("n%d", p.Nodes)
	for _, s := range p.Steps {
		if s.Via == p.Nodes || slices.Contains(s.Side, last) || slices.Contains(s.Peers, last) {
			return p, false
		}
	}
	q := clonePlan(p)
	q.Nodes--
	for i := range q.Steps {
		q.Steps[i].Side = slices.DeleteFunc(slices.Clone(q.Steps[i].Side), func(h string) bool { return strings.EqualFold(h, last) })
	}
	if fails(q) {
		return q, true
	}
	return p, false
}
