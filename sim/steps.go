package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chronos-timer/chronos/node"
)

// Role host names: "<timer>.A" is the timer's primary, ".B" its first
// backup, ".C" the second, and so on: the rendezvous order of the timer's
// unique ID over the cluster's nodes (node.Ring.Replicas). A role is
// resolved when its step fires, from the ID the client learned when the
// timer's create (or update) returned.

// maxRoles bounds role letters (A..P, one per possible node).
const maxRoles = MaxNodes

// parseRole splits "t1.B" into ("t1", 1). ok is false for a plain host.
func parseRole(name string) (timer string, rank int, ok bool) {
	timer, role, found := strings.Cut(name, ".")
	if !found || timer == "" || len(role) != 1 || role[0] < 'A' || role[0] >= 'A'+maxRoles {
		return "", 0, false
	}
	return timer, int(role[0] - 'A'), true
}

// isRoleLike reports whether a host name looks like it means a role, so
// that a malformed one ("t1.a", "t1.AB") gets a role error.
func isRoleLike(name string) bool { return strings.Contains(name, ".") }

// validRole checks a role name against the plan.
func (p *Plan) validRole(name string) error {
	_, rank, ok := parseRole(name)
	switch {
	case !ok:
		return fmt.Errorf("bad role %q: want <timer>.<A..%c> (A primary, B first backup, ...)", name, 'A'+maxRoles-1)
	case rank >= p.Nodes:
		return fmt.Errorf("role %q: rank %d but only %d nodes", name, rank+1, p.Nodes)
	}
	return nil
}

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
		if nodeAddr(i) == order[rank] {
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

// StepCheck is an expectation checked when its step fires ("at <time>
// expect ...").
type StepCheck struct {
	// What is "popped" or "held".
	What  string
	Timer string
	// Seq is the X-Sequence-Number (popped) or the held copy's Seq, pops
	// done (held); 0: any.
	Seq int
	// By (popped): every matching pop came from this host. On (held): the
	// node looked at.
	By, On string
	// Count (popped): exactly this many matching pops; -1: at least one.
	Count int
	// None (held): On holds no live copy. Nowhere (held): no node does.
	None, Nowhere bool
}

// parseCheck parses "popped <timer> [seq=<n>] [by=<host>] [count=<n>]",
// "held <timer> on=<host> [seq=<n>]", "held <timer> on=<host> none" and
// "held <timer> nowhere".
func parseCheck(args []string) (*StepCheck, error) {
	const want = "want: expect popped <timer> [seq=<n>] [by=<node>] [count=<n>] | " +
		"expect held <timer> on=<node> [seq=<n> | none] | expect held <timer> nowhere"
	if len(args) < 2 || (args[0] != "popped" && args[0] != "held") || strings.Contains(args[1], "=") {
		return nil, fmt.Errorf("%s", want)
	}
	c := &StepCheck{What: args[0], Timer: args[1], Count: -1}
	seen := map[string]bool{}
	for _, a := range args[2:] {
		k, v, kv := strings.Cut(a, "=")
		if seen[k] {
			return nil, fmt.Errorf("%q given twice", k)
		}
		seen[k] = true
		var err error
		switch {
		case kv && k == "seq":
			c.Seq, err = strconv.Atoi(v)
			if err == nil && c.Seq < 1 {
				err = fmt.Errorf("seq must be >= 1")
			}
		case kv && k == "by" && c.What == "popped":
			c.By = v
		case kv && k == "count" && c.What == "popped":
			c.Count, err = strconv.Atoi(v)
			if err == nil && c.Count < 0 {
				err = fmt.Errorf("count must be >= 0")
			}
		case kv && k == "on" && c.What == "held":
			c.On = v
		case !kv && a == "none" && c.What == "held":
			c.None = true
		case !kv && a == "nowhere" && c.What == "held":
			c.Nowhere = true
		default:
			err = fmt.Errorf("unexpected %q; %s", a, want)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
	}
	if c.What == "held" {
		switch {
		case c.Nowhere && (c.On != "" || c.None || c.Seq != 0):
			return nil, fmt.Errorf("held ... nowhere takes nothing else")
		case !c.Nowhere && c.On == "":
			return nil, fmt.Errorf("held needs on=<node> or nowhere")
		case c.None && c.Seq != 0:
			return nil, fmt.Errorf("held ... none takes no seq")
		}
	}
	return c, nil
}

// String renders the check as in a scenario file, after "expect".
func (c *StepCheck) String() string {
	t := c.What + " " + c.Timer
	if c.On != "" {
		t += " on=" + c.On
	}
	if c.Seq != 0 {
		t += fmt.Sprintf(" seq=%d", c.Seq)
	}
	if c.By != "" {
		t += " by=" + c.By
	}
	if c.Count >= 0 && c.What == "popped" {
		t += fmt.Sprintf(" count=%d", c.Count)
	}
	if c.None {
		t += " none"
	}
	if c.Nowhere {
		t += " nowhere"
	}
	return t
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
		return t, ok && !t.Tombstone
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

// hasStepChecks reports whether the plan has "at <time> expect" steps.
func (p *Plan) hasStepChecks() bool {
	for _, s := range p.Steps {
		if s.Op == OpExpect {
			return true
		}
	}
	return false
}
