package sim

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteScenario writes the plan in the scenario text format that
// ParseScenario reads back to an equal plan.
func WriteScenario(w io.Writer, p *Plan) error {
	var b strings.Builder
	if p.Name != "" {
		fmt.Fprintf(&b, "name %s\n", p.Name)
	}
	fmt.Fprintf(&b, "seed %d\nnodes %d\ncallbacks %d\nclients %d\n", p.Seed, p.Nodes, p.Callbacks, p.Clients)
	o := p.Net
	fmt.Fprintf(&b, "net latency-min=%v latency-mean=%v latency-max=%v loss=%s dup=%s reorder=%s reorder-max=%v\n",
		o.LatencyMin, o.LatencyMean, o.LatencyMax, ftoa(o.LossRate), ftoa(o.DuplicateRate), ftoa(o.ReorderRate), o.ReorderDelayMax)
	if o.NodeWorkers+o.EndpointWorkers > 0 {
		fmt.Fprintf(&b, "net node-workers=%d node-service=%v node-send=%v cb-workers=%d cb-service=%v\n",
			o.NodeWorkers, o.NodeServiceTime, o.NodeSendTime, o.EndpointWorkers, o.EndpointServiceTime)
	}
	if o := p.Node; o != (NodeOptions{}) {
		fmt.Fprintf(&b, "node resync-page=%d max-timers=%d max-in-flight=%d", o.ResyncPage, o.MaxTimers, o.MaxInFlight)
		if o.MaxHeldBytes > 0 {
			fmt.Fprintf(&b, " max-held-bytes=%d", o.MaxHeldBytes)
		}
		b.WriteString("\n")
	}
	for _, i := range slices.Sorted(maps.Keys(p.Addrs)) {
		fmt.Fprintf(&b, "address n%d %s\n", i, p.Addrs[i])
	}
	if len(p.Mix) > 0 {
		fmt.Fprintf(&b, "mix %s\n", strings.Join(p.Mix, ","))
	}
	for _, r := range p.Requires {
		fmt.Fprintf(&b, "requires %s\n", r)
	}
	if p.LivenessFrom > 0 {
		fmt.Fprintf(&b, "liveness %v\n", p.LivenessFrom)
	}
	fmt.Fprintf(&b, "end %v\n", p.End)
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "at %v %s\n", s.At, s.String())
	}
	for _, e := range p.Expect {
		fmt.Fprintf(&b, "expect %s\n", e.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// String renders the step as a scenario line without its "at <time>".
func (s Step) String() string {
	switch s.Op {
	case OpBurst:
		return fmt.Sprintf("burst %s %d via n%d client=%d over=%v interval=%v repeat-for=%v rf=%d cb=c%d",
			s.Timer, s.Count, s.Via, s.Client, s.For, s.Interval, s.RepeatFor, s.RF, s.Callback)
	case OpCreate, OpUpdate, OpDelete:
		t := fmt.Sprintf("%s %s via n%d client=%d", s.Op, s.Timer, s.Via, s.Client)
		if s.Op != OpDelete {
			t += fmt.Sprintf(" interval=%v repeat-for=%v rf=%d cb=c%d", s.Interval, s.RepeatFor, s.RF, s.Callback)
		}
		if s.ID != 0 {
			t += fmt.Sprintf(" id=%016x", s.ID)
		}
		if s.Tag != "" {
			t += " tag=" + s.Tag
		}
		if s.Bare {
			t += " bare"
		}
		return t
	case OpLose:
		t := fmt.Sprintf("lose %s -> %s timer=%s", strings.Join(s.Side, " "), strings.Join(s.Peers, " "), s.Timer)
		if s.Count > 0 {
			t += fmt.Sprintf(" skip=%d", s.Count)
		}
		return t + fmt.Sprintf(" for=%v", s.For)
	case OpPartition, OpClog, OpHold, OpReplay:
		sep := "|"
		if s.OneWay {
			sep = "->"
		}
		t := fmt.Sprintf("%s %s %s %s", s.Op, strings.Join(s.Side, " "), sep, strings.Join(s.Peers, " "))
		switch {
		case s.For > 0 && s.Op == OpReplay:
			t += fmt.Sprintf(" older=%v", s.For)
		case s.For > 0:
			t += fmt.Sprintf(" for=%v", s.For)
		}
		return t
	case OpJump:
		return fmt.Sprintf("jump %s %s", s.Side[0], signed(s.Delta))
	case OpDrift:
		return fmt.Sprintf("drift %s %dppm", s.Side[0], s.PPM)
	case OpSlow:
		return fmt.Sprintf("slow %s delay=%v", s.Side[0], s.Delta)
	case OpFail:
		return fmt.Sprintf("fail %s status=%d", s.Side[0], s.Status)
	case OpHeal:
		return string(s.Op)
	case OpExpect:
		return "expect " + s.Check.String()
	}
	return fmt.Sprintf("%s %s", s.Op, strings.Join(s.Side, " "))
}

func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// String renders the expectation as in a scenario file.
func (e Expect) String() string {
	switch e.What {
	case "violation":
		return "violation " + e.Guarantee
	case "pops":
		return fmt.Sprintf("pops %s >= %d", e.Timer, e.Count)
	case "shed":
		return fmt.Sprintf("shed >= %d", e.Count)
	case "probe":
		if e.AtMost {
			return fmt.Sprintf("probe %s <= %d", e.Probe, e.Count)
		}
		return fmt.Sprintf("probe %s >= %d", e.Probe, e.Count)
	}
	return e.What
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
