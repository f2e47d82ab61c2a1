package sim

import (
	"fmt"
	"strings"

	"github.com/chronos-timer/chronos/node"
)

// resolveHost turns a role into the node name it means now ("t1.A" ->
// "n2"); plain hosts come back unchanged. A role of a timer whose ID is
// not known yet is an error of the scenario.
func (w *world) resolveHost(name string) (string, error) {
	timer, rank, ok := parseRole(name)
	if !ok {
		return name, nil
	}
	ref := w.timers[timer]
	if ref == nil {
		return "", fmt.Errorf("role %s: the ID of timer %s is not known yet (no create of it has returned)", name, timer)
	}
	order := node.NewRing(w.addrs()).Replicas(ref.id, w.plan.Nodes)
	if rank >= len(order) {
		return "", fmt.Errorf("role %s: only %d nodes", name, len(order))
	}
	for i := 1; i <= w.plan.Nodes; i++ {
		if w.plan.nodeAddr(i) == order[rank] {
			return fmt.Sprintf("n%d", i), nil
		}
	}
	return "", fmt.Errorf("role %s: ring answered unknown node %q", name, order[rank])
}

// resolveStep resolves every role the step names, tracing each.
func (w *world) resolveStep(s Step) (Step, error) {
	resolve := func(names []string) ([]string, error) {
		if len(names) == 0 {
			return names, nil
		}
		out := make([]string, len(names))
		for i, n := range names {
			h, err := w.resolveHost(n)
			if err != nil {
				return nil, err
			}
			if h != n {
				w.tr.note("role %s = %s", n, h)
			}
			out[i] = h
		}
		return out, nil
	}
	var err error
	if s.Side, err = resolve(s.Side); err != nil {
		return s, err
	}
	if s.Peers, err = resolve(s.Peers); err != nil {
		return s, err
	}
	if s.Check != nil {
		c := *s.Check
		for _, h := range []*string{&c.By, &c.On} {
			if *h == "" {
				continue
			}
			r, err := resolve([]string{*h})
			if err != nil {
				return s, err
			}
			*h = r[0]
		}
		s.Check = &c
	}
	return s, nil
}

// scenarioError records a step the scenario got wrong; the run fails.
func (w *world) scenarioError(s Step, err error) {
	msg := fmt.Sprintf("scenario error at %v (%s): %v", s.At, s.String(), err)
	w.scenarioErrs = append(w.scenarioErrs, msg)
	w.tr.note("%s", msg)
}

// checkStep evaluates a step expectation now; a miss is an unmet
// expectation of the run. s is the step as written, c its check with the
// roles resolved.
func (w *world) checkStep(s Step, c *StepCheck) {
	var miss string
	switch c.What {
	case "popped":
		miss = w.checkPopped(c)
	case "held":
		miss = w.checkHeld(c)
	}
	if miss == "" {
		w.tr.note("expect %s: met", s.Check)
		return
	}
	msg := fmt.Sprintf("at %v expect %s: %s", s.At, s.Check, miss)
	if c.String() != s.Check.String() {
		msg = fmt.Sprintf("at %v expect %s (%s): %s", s.At, s.Check, c, miss)
	}
	w.stepUnmet = append(w.stepUnmet, msg)
	w.tr.note("UNMET %s", msg)
}

// checkPopped looks at the pops of the timer delivered in the window since
// the previous "expect popped" of the same timer (exclusive; from the
// start of the run for the first) up to now (inclusive).
func (w *world) checkPopped(c *StepCheck) string {
	from, now := w.poppedMark[c.Timer], w.loop.Now()
	w.poppedMark[c.Timer] = now
	var match []string
	byOK := true
	for _, p := range w.hist.Pops {
		l, _, _ := strings.Cut(p.Opaque, ".")
		if l != c.Timer || p.At <= from || p.At > now || (c.Seq != 0 && p.Seq != c.Seq) {
			continue
		}
		who := w.nodeName(p.Node)
		match = append(match, fmt.Sprintf("seq %d by %s at %v", p.Seq, who, p.At))
		if c.By != "" && who != c.By {
			byOK = false
		}
	}
	window := fmt.Sprintf("in (%v, %v]", from, now)
	got := "none"
	if len(match) > 0 {
		got = strings.Join(match, "; ")
	}
	switch {
	case c.Count < 0 && len(match) == 0:
		return fmt.Sprintf("no matching pop %s", window)
	case c.Count >= 0 && len(match) != c.Count:
		return fmt.Sprintf("%d matching pops %s, want %d: %s", len(match), window, c.Count, got)
	case !byOK:
		return fmt.Sprintf("not all by %s %s: %s", c.By, window, got)
	}
	return ""
}

// checkHeld looks at what the nodes hold now. A live copy is one that is
// not a tombstone; a crashed node holds nothing.
func (w *world) checkHeld(c *StepCheck) string {
	ref := w.timers[c.Timer]
	if ref == nil {
		// No ID known: nothing can be looked up, so nothing is held as far
		// as the client can tell; only "none"/"nowhere" can hold.
		if c.None || c.Nowhere {
			return ""
		}
		return fmt.Sprintf("the ID of timer %s is not known yet", c.Timer)
	}
	live := func(m *machine) (node.Timer, bool) {
		if m.crashed || m.node == nil {
			return node.Timer{}, false
		}
		t, ok := m.node.Timer(ref.id)
		return t, ok && t.State == node.Live
	}
	if c.Nowhere {
		var on []string
		for _, m := range w.machines {
			if t, ok := live(m); ok {
				on = append(on, fmt.Sprintf("n%d (seq %d)", m.idx, t.Seq))
			}
		}
		if len(on) > 0 {
			return "live copy on " + strings.Join(on, ", ")
		}
		return ""
	}
	m := w.machine(c.On)
	t, ok := live(m)
	switch {
	case c.None && ok:
		return fmt.Sprintf("%s holds a live copy (seq %d)", c.On, t.Seq)
	case !c.None && !ok:
		return fmt.Sprintf("%s holds no live copy", c.On)
	case !c.None && c.Seq != 0 && int(t.Seq) != c.Seq:
		return fmt.Sprintf("%s holds seq %d", c.On, t.Seq)
	}
	return ""
}

// nodeName maps a node address back to its scenario name ("n2").
func (w *world) nodeName(addr string) string {
	for _, m := range w.machines {
		if m.addr == addr {
			return fmt.Sprintf("n%d", m.idx)
		}
	}
	return addr
}
