package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/netsim"
	"github.com/chronos-timer/chronos/node"
)

// MaxScenarioBytes bounds a scenario file.
const MaxScenarioBytes = 1 << 20

// ParseScenario reads a plan from the scenario text format: one command a
// line, '#' starts a comment. See scenarios/README.md for the grammar.
// Steps are ordered by time, ties in file order.
func ParseScenario(r io.Reader) (*Plan, error) {
	p := &Plan{Seed: 1, Nodes: 3, Callbacks: 1, Clients: 1, Net: netsim.DefaultOptions()}
	sc := bufio.NewScanner(io.LimitReader(r, MaxScenarioBytes))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if err := p.parseLine(f); err != nil {
			return nil, fmt.Errorf("sim: scenario line %d %q: %w", line, strings.TrimSpace(text), err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sim: reading scenario: %w", err)
	}
	slices.SortStableFunc(p.Steps, func(a, b Step) int { return int(a.At - b.At) })
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plan) parseLine(f []string) error {
	var err error
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		err = fmt.Errorf("missing argument %d", i)
		return ""
	}
	switch f[0] {
	case "name":
		p.Name = arg(1)
	case "seed":
		p.Seed, err = strconv.ParseUint(arg(1), 10, 64)
	case "nodes":
		p.Nodes, err = strconv.Atoi(arg(1))
	case "callbacks":
		p.Callbacks, err = strconv.Atoi(arg(1))
	case "clients":
		p.Clients, err = strconv.Atoi(arg(1))
	case "end":
		p.End, err = time.ParseDuration(arg(1))
	case "liveness":
		p.LivenessFrom, err = time.ParseDuration(arg(1))
	case "mix":
		p.Mix = strings.Split(arg(1), ",")
	case "requires":
		p.Requires = append(p.Requires, f[1:]...)
	case "net":
		return parseNet(&p.Net, f[1:])
	case "node":
		return parseNodeOptions(&p.Node, f[1:])
	case "address":
		var i int
		if len(f) != 3 {
			return fmt.Errorf("want: address n<i> <host:port>")
		}
		if _, err := fmt.Sscanf(f[1], "n%d", &i); err != nil || f[1] != fmt.Sprintf("n%d", i) {
			return fmt.Errorf("want: address n<i> <host:port>, not %q", f[1])
		}
		if p.Addrs == nil {
			p.Addrs = map[int]string{}
		}
		p.Addrs[i] = f[2]
	case "expect":
		return p.parseExpect(f[1:])
	case "at":
		return p.parseStep(f[1:])
	default:
		return fmt.Errorf("unknown command %q", f[0])
	}
	return err
}

func parseNet(o *netsim.Options, kv []string) error {
	durs := map[string]*time.Duration{"latency-min": &o.LatencyMin, "latency-mean": &o.LatencyMean,
		"latency-max": &o.LatencyMax, "reorder-max": &o.ReorderDelayMax,
		"node-service": &o.NodeServiceTime, "node-send": &o.NodeSendTime, "cb-service": &o.EndpointServiceTime}
	ints := map[string]*int{"node-workers": &o.NodeWorkers, "cb-workers": &o.EndpointWorkers}
	probs := map[string]*float64{"loss": &o.LossRate, "dup": &o.DuplicateRate, "reorder": &o.ReorderRate}
	for _, a := range kv {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch {
		case durs[k] != nil:
			*durs[k], err = time.ParseDuration(v)
		case probs[k] != nil:
			*probs[k], err = strconv.ParseFloat(v, 64)
		case ints[k] != nil:
			*ints[k], err = strconv.Atoi(v)
		default:
			err = fmt.Errorf("unknown net option %q", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseNodeOptions: resync-page=<n> max-timers=<n> max-in-flight=<n>
// max-held-bytes=<n>.
func parseNodeOptions(o *NodeOptions, kv []string) error {
	ints := map[string]*int{"resync-page": &o.ResyncPage, "max-timers": &o.MaxTimers, "max-in-flight": &o.MaxInFlight}
	for _, a := range kv {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch {
		case k == "max-held-bytes":
			o.MaxHeldBytes, err = strconv.ParseInt(v, 10, 64)
		case ints[k] != nil:
			*ints[k], err = strconv.Atoi(v)
		default:
			return fmt.Errorf("unknown node option %q", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *Plan) parseExpect(f []string) error {
	if len(f) == 0 {
		return fmt.Errorf("expect what?")
	}
	e := Expect{What: f[0]}
	switch {
	case f[0] == "ok" && len(f) == 1:
	case f[0] == "violation" && len(f) == 2:
		e.Guarantee = f[1]
	case f[0] == "pops" && len(f) == 4 && f[2] == ">=":
		e.Timer = f[1]
		n, err := strconv.Atoi(f[3])
		if err != nil {
			return err
		}
		e.Count = n
	case f[0] == "shed" && len(f) == 3 && f[1] == ">=":
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return err
		}
		e.Count = n
	case f[0] == "probe" && len(f) == 4 && (f[2] == ">=" || f[2] == "<=") && slices.Contains(node.ProbeNames(), f[1]):
		e.Probe, e.AtMost = f[1], f[2] == "<="
		n, err := strconv.Atoi(f[3])
		if err != nil {
			return err
		}
		e.Count = n
	default:
		return fmt.Errorf("want: expect ok | expect violation G<n> | expect pops <timer> >= <n> | expect shed >= <n> | expect probe <declared probe> >= <n> | expect probe <declared probe> <= <n>")
	}
	p.Expect = append(p.Expect, e)
	return nil
}

// parseStep parses "<time> <op> args...".
func (p *Plan) parseStep(f []string) error {
	if len(f) < 2 {
		return errors.New("want: at <time> <action> [<argument> ...] (an action and its arguments)")
	}
	at, err := time.ParseDuration(f[0])
	if err != nil {
		return err
	}
	s := Step{At: at, Op: Op(f[1]), Client: 1, Callback: 1, RF: 0}
	args := f[2:]
	switch s.Op {
	case OpCreate, OpUpdate, OpDelete:
		err = parseTimerStep(&s, args)
	case OpBurst:
		// burst <prefix> <count> via n<i> [over=<duration>] key=value...
		if len(args) < 2 {
			return errors.New("want: burst <prefix> <count> via n<i> [over=<d>] [key=value ...]")
		}
		if s.Count, err = strconv.Atoi(args[1]); err != nil {
			return err
		}
		rest := []string{args[0]}
		for _, a := range args[2:] {
			if v, ok := strings.CutPrefix(a, "over="); ok {
				if s.For, err = time.ParseDuration(v); err != nil {
					return err
				}
				continue
			}
			rest = append(rest, a)
		}
		err = parseTimerStep(&s, rest)
	case OpCrash, OpRestart, OpPause, OpResume, OpJump, OpDrift, OpSlow, OpFail, OpCallbackOK,
		OpDiskFull, OpDiskLie, OpDiskOK, OpDiskCorrupt:
		err = parseHostStep(&s, args)
	case OpPartition, OpClog, OpHold, OpReplay, OpLose:
		err = parseCutStep(&s, args)
	case OpExpect:
		s.Check, err = parseCheck(args)
	case OpScaleUp, OpScaleDown:
		if len(args) == 0 {
			err = fmt.Errorf("want: %s n<i> [n<j> ...]", s.Op)
		}
		s.Side = args
	case OpHeal:
		if len(args) != 0 {
			err = fmt.Errorf("%s takes no arguments", s.Op)
		}
	default:
		err = fmt.Errorf("unknown action %q", s.Op)
	}
	if err != nil {
		return err
	}
	p.Steps = append(p.Steps, s)
	return nil
}

// parseTimerStep: <label> via n<i> [client=<k>] [interval=..] [repeat-for=..] [rf=..] [cb=c<k>].
func parseTimerStep(s *Step, args []string) error {
	if len(args) < 3 || args[1] != "via" {
		return fmt.Errorf("want: %s <timer> via n<i> [key=value ...]", s.Op)
	}
	s.Timer = args[0]
	if _, err := fmt.Sscanf(args[2], "n%d", &s.Via); err != nil {
		return fmt.Errorf("bad node %q", args[2])
	}
	for _, a := range args[3:] {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch k {
		case "bare":
			s.Bare = true
		case "client":
			s.Client, err = strconv.Atoi(v)
		case "interval":
			s.Interval, err = time.ParseDuration(v)
		case "repeat-for":
			s.RepeatFor, err = time.ParseDuration(v)
		case "rf":
			s.RF, err = strconv.Atoi(v)
		case "cb":
			_, err = fmt.Sscanf(v, "c%d", &s.Callback)
		case "id":
			s.ID, err = strconv.ParseUint(v, 16, 64)
		case "tag":
			s.Tag = v
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	return nil
}

// parseHostStep: <host> [+/-duration | <n>ppm | delay=.. | status=..].
func parseHostStep(s *Step, args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("want: %s <host>", s.Op)
	}
	s.Side = []string{args[0]}
	for _, a := range args[1:] {
		var err error
		k, v, kv := strings.Cut(a, "=")
		switch {
		case s.Op == OpJump && !kv:
			s.Delta, err = time.ParseDuration(strings.TrimPrefix(a, "+"))
		case s.Op == OpDrift && strings.HasSuffix(a, "ppm"):
			s.PPM, err = strconv.ParseInt(strings.TrimSuffix(a, "ppm"), 10, 64)
		case s.Op == OpSlow && k == "delay":
			s.Delta, err = time.ParseDuration(v)
		case s.Op == OpFail && k == "status":
			s.Status, err = strconv.Atoi(v)
		default:
			err = fmt.Errorf("unexpected argument %q", a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseCutStep: <hosts> | <hosts> (symmetric) or <hosts> -> <hosts>
// (one-way: the left side cannot reach the right), then [for=<duration>].
func parseCutStep(s *Step, args []string) error {
	side := &s.Side
	sep := false
	for _, a := range args {
		switch {
		case a == "|" || a == "->":
			if sep {
				return fmt.Errorf("two separators")
			}
			sep, s.OneWay, side = true, a == "->", &s.Peers
		case s.Op == OpLose && strings.HasPrefix(a, "timer="):
			s.Timer = strings.TrimPrefix(a, "timer=")
		case s.Op == OpLose && strings.HasPrefix(a, "skip="):
			n, err := strconv.Atoi(strings.TrimPrefix(a, "skip="))
			if err != nil {
				return err
			}
			s.Count = n
		case strings.HasPrefix(a, "for=") || strings.HasPrefix(a, "older="):
			_, v, _ := strings.Cut(a, "=")
			d, err := time.ParseDuration(v)
			if err != nil {
				return err
			}
			s.For = d
		default:
			*side = append(*side, a)
		}
	}
	if !sep || len(s.Side) == 0 || len(s.Peers) == 0 {
		return fmt.Errorf("want: %s <hosts> | <hosts>, or <hosts> -> <hosts>", s.Op)
	}
	if s.Op == OpClog && (!s.OneWay || s.For <= 0) {
		return fmt.Errorf("want: clog <hosts> -> <hosts> for=<duration>")
	}
	if s.Op == OpHold && !s.OneWay {
		return fmt.Errorf("want: hold <hosts> -> <hosts>")
	}
	if s.Op == OpLose && (!s.OneWay || s.Timer == "" || s.For <= 0) {
		return fmt.Errorf("want: lose <hosts> -> <hosts> timer=<timer> [skip=<n>] for=<duration>")
	}
	if s.Op == OpReplay && !s.OneWay {
		return fmt.Errorf("want: replay <hosts> -> <hosts> [older=<duration>]")
	}
	return nil
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
