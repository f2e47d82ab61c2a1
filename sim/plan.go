package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/netsim"
	"github.com/chronos-timer/chronos/node"
)

// Named limits of a plan.
const (
	MaxNodes     = 16
	MaxCallbacks = 16
	MaxClients   = 16
	MaxSteps     = 10_000
	// MaxBurst bounds the creates of one burst step.
	MaxBurst = 100_000
	// MaxRunTime bounds a plan's simulated length.
	MaxRunTime = 24 * time.Hour
)

// Plan is one run as data: the cluster, the network, the workload and the
// fault schedule. A seed generates a plan; a scenario file is a plan
// written out; shrinking edits a plan. Running a plan is deterministic.
type Plan struct {
	Name string
	// Origin is the scenario file the plan was read from ("" for a seed);
	// it is not part of the scenario text.
	Origin string
	// Seed drives the run's own randomness (network and clock streams).
	Seed      uint64
	Nodes     int
	Callbacks int
	Clients   int
	Net       netsim.Options
	// Node overrides parts of every node's configuration.
	Node NodeOptions
	// Addrs gives some nodes (by 1-based index) an address other than
	// 10.0.0.<i>:7253, so that a plan can choose members whose derived
	// instance numbers clash (node.InstanceIDs).
	Addrs map[int]string
	// LivenessFrom is when faults stop and everything heals (0: no
	// liveness phase); End is when the run stops.
	LivenessFrom time.Duration
	End          time.Duration
	// Mix names the fault kinds the generator enabled (swarm testing).
	Mix []string
	// Requires lists features the expectations depend on ("replication");
	// until they exist, the expectations are reported, not enforced.
	Requires []string
	Steps    []Step
	Expect   []Expect
}

// NodeOptions are the parts of the nodes' configuration a plan sets; 0
// keeps the node's default.
type NodeOptions struct {
	// ResyncPage is the timers a resync asks for a page (node.Config).
	ResyncPage int
	// MaxTimers, MaxInFlight and MaxHeldBytes are the node's limits
	// (node.Limits).
	MaxTimers, MaxInFlight int
	MaxHeldBytes           int64
}

func (o NodeOptions) validate() error {
	switch {
	case o.ResyncPage < 0 || o.ResyncPage > node.MaxResyncPage:
		return fmt.Errorf("sim: plan node resync-page %d not in 0..%d", o.ResyncPage, node.MaxResyncPage)
	case o.MaxTimers < 0 || o.MaxInFlight < 0 || o.MaxHeldBytes < 0:
		return fmt.Errorf("sim: plan node max-timers %d, max-in-flight %d and max-held-bytes %d must not be negative", o.MaxTimers, o.MaxInFlight, o.MaxHeldBytes)
	}
	return nil
}

// configure applies the options to a node's configuration.
func (o NodeOptions) configure(cfg *node.Config) {
	// A plan that pages resyncs small pages repair's answers as small.
	cfg.ResyncPage, cfg.RepairPage = o.ResyncPage, o.ResyncPage
	if o.MaxTimers > 0 {
		cfg.Limits.MaxTimers = o.MaxTimers
	}
	if o.MaxInFlight > 0 {
		cfg.Limits.MaxInFlight = o.MaxInFlight
	}
	if o.MaxHeldBytes > 0 {
		cfg.Limits.MaxHeldBytes = o.MaxHeldBytes
	}
}

// Op names a step's action.
type Op string

// Step actions.
const (
	OpCreate     Op = "create"
	OpUpdate     Op = "update"
	OpDelete     Op = "delete"
	OpCrash      Op = "crash"
	OpRestart    Op = "restart"
	OpPause      Op = "pause"
	OpResume     Op = "resume"
	OpPartition  Op = "partition"
	OpHeal       Op = "heal"
	OpClog       Op = "clog"
	OpJump       Op = "jump"
	OpDrift      Op = "drift"
	OpSlow       Op = "slow"
	OpFail       Op = "fail"
	OpCallbackOK Op = "callback-ok"
	OpScaleUp    Op = "scale-up"
	OpScaleDown  Op = "scale-down"
	// OpBurst creates Count timers <Timer>1..<Timer>N through one node,
	// spread evenly over For: a load spike in one line.
	OpBurst Op = "burst"
	// OpExpect checks Check when the step fires.
	OpExpect Op = "expect"
	// Disk faults of a plan with storage (MixStorage, disk.go): a full
	// disk, one whose syncs lie, both ended by OpDiskOK, and one bit of
	// synced data flipped.
	OpDiskFull    Op = "disk-full"
	OpDiskLie     Op = "disk-lie"
	OpDiskOK      Op = "disk-ok"
	OpDiskCorrupt Op = "disk-corrupt"
	// OpHold cuts links one way, keeping what is sent on them until the
	// next heal, which delivers it however long after its senders gave
	// up; OpReplay sends again the requests captured on links that were
	// sent For or more ago (netsim late.go).
	OpHold   Op = "hold"
	OpReplay Op = "replay"
	// OpLose loses one request about timer Timer on each link from Side
	// to Peers: the one after Count earlier ones about it, sent within
	// For (netsim lose.go). A link that otherwise works loses that one
	// message, as a connection reset does.
	OpLose Op = "lose"
)

// Step is one scheduled action. Node, callback and client numbers are
// 1-based, as in scenario files (n1, c1).
type Step struct {
	At time.Duration
	Op Op
	// Client operations.
	Timer     string
	Client    int
	Via       int
	Interval  time.Duration
	RepeatFor time.Duration
	RF        int
	Callback  int
	// ID, when not 0, is the unique ID a create chooses for its timer: it
	// is sent as a PUT to /timers/<ID> instead of a POST.
	ID uint64
	// Tag, when set, is one statistics tag "<type>:<count>".
	Tag string
	// Bare, on an update or delete, names the timer by its bare unique
	// ID (a wire ID whose replica bits are empty), as a client that keeps
	// only the ID it chose does, instead of the Location it was given.
	Bare bool
	// Faults: hosts on each side ("n1", "c2"), one-way or not.
	Side   []string
	Peers  []string
	OneWay bool
	// Count is how many timers a burst creates.
	Count int
	// For is how long a clog lasts or a burst spreads over; Delta a clock
	// jump or callback delay.
	For    time.Duration
	Delta  time.Duration
	PPM    int64
	Status int
	// Check is an OpExpect step's expectation.
	Check *StepCheck
}

// Expect is one expectation of a scenario.
type Expect struct {
	// What is "ok" (no violation), "violation" (Guarantee is reported),
	// "pops" (timer Timer popped at least Count distinct sequence numbers),
	// "shed" (the nodes shed at least Count sends under load, see
	// netsim.ErrShed) or "probe" (the nodes passed coverage probe Probe,
	// node/probe.go, at least Count times, or with AtMost at most Count
	// times: a bound on how often a run may take a path, such as the
	// records a full node refuses).
	What      string
	Guarantee string
	Timer     string
	Probe     string
	Count     int
	AtMost    bool
}

// Validate reports the first thing wrong with the plan.
func (p *Plan) Validate() error {
	switch {
	case p.Nodes < 1 || p.Nodes > MaxNodes:
		return fmt.Errorf("sim: plan nodes %d not in [1, %d]", p.Nodes, MaxNodes)
	case p.Callbacks < 1 || p.Callbacks > MaxCallbacks:
		return fmt.Errorf("sim: plan callbacks %d not in [1, %d]", p.Callbacks, MaxCallbacks)
	case p.Clients < 1 || p.Clients > MaxClients:
		return fmt.Errorf("sim: plan clients %d not in [1, %d]", p.Clients, MaxClients)
	case p.End <= 0 || p.End > MaxRunTime:
		return fmt.Errorf("sim: plan end %v not in (0, %v]", p.End, MaxRunTime)
	case p.LivenessFrom < 0 || p.LivenessFrom > p.End:
		return fmt.Errorf("sim: plan liveness %v not in [0, end %v]", p.LivenessFrom, p.End)
	case len(p.Steps) > MaxSteps:
		return fmt.Errorf("sim: plan has %d steps, more than %d", len(p.Steps), MaxSteps)
	}
	if err := p.Net.Validate(); err != nil {
		return err
	}
	if err := p.Node.validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := 1; i <= p.Nodes; i++ {
		a := p.nodeAddr(i)
		if _, port, ok := strings.Cut(a, ":"); !ok || port == "" || seen[a] {
			return fmt.Errorf("sim: plan address %q of n%d is not host:port, or is another node's", a, i)
		}
		seen[a] = true
	}
	for i := range p.Addrs {
		if i < 1 || i > p.Nodes {
			return fmt.Errorf("sim: plan address of n%d: no such node", i)
		}
	}
	for i, s := range p.Steps {
		if err := p.validateStep(s); err != nil {
			return fmt.Errorf("sim: plan step %d (%s at %v): %w", i+1, s.Op, s.At, err)
		}
	}
	if _, err := p.scaledMembers(); err != nil {
		return err
	}
	return nil
}

// InitialMembers lists the nodes (1-based) in the cluster when the run
// starts: every machine but those a scale-up step brings in (a machine
// whose first scale step is a scale-up starts outside the cluster and is
// not booted until then).
func (p *Plan) InitialMembers() []int {
	first := map[string]Op{}
	for _, s := range p.Steps {
		if s.Op != OpScaleUp && s.Op != OpScaleDown {
			continue
		}
		for _, n := range s.Side {
			if _, seen := first[n]; !seen {
				first[n] = s.Op
			}
		}
	}
	var out []int
	for i := 1; i <= p.Nodes; i++ {
		if first[fmt.Sprintf("n%d", i)] != OpScaleUp {
			out = append(out, i)
		}
	}
	return out
}

// scaledMembers follows the plan's scale steps from InitialMembers, in
// order, and returns the members after the last; it reports a scale-up of
// a member, a scale-down of a node outside the cluster, one that would
// leave no member, and scaling in a plan of two sites.
func (p *Plan) scaledMembers() ([]int, error) {
	members := p.InitialMembers()
	if len(members) == 0 {
		return nil, fmt.Errorf("sim: plan has no member at the start")
	}
	for i, s := range p.Steps {
		if s.Op != OpScaleUp && s.Op != OpScaleDown {
			continue
		}
		if p.enabled(mixSites) {
			return nil, fmt.Errorf("sim: plan step %d: %s in a plan of two sites", i+1, s.Op)
		}
		for _, n := range s.Side {
			var k int
			fmt.Sscanf(n, "n%d", &k)
			switch in := slices.Contains(members, k); {
			case s.Op == OpScaleUp && in:
				return nil, fmt.Errorf("sim: plan step %d: scale-up of %s, already a member", i+1, n)
			case s.Op == OpScaleDown && !in:
				return nil, fmt.Errorf("sim: plan step %d: scale-down of %s, not a member", i+1, n)
			case s.Op == OpScaleUp:
				members = append(members, k)
			default:
				members = slices.DeleteFunc(members, func(m int) bool { return m == k })
			}
		}
		if len(members) == 0 {
			return nil, fmt.Errorf("sim: plan step %d: scale-down leaves no member", i+1)
		}
		slices.Sort(members)
	}
	return members, nil
}

func (p *Plan) validateStep(s Step) error {
	if s.At < 0 || s.At > p.End {
		return fmt.Errorf("time not in [0, end %v]", p.End)
	}
	switch s.Op {
	case OpBurst:
		if s.Count < 1 || s.Count > MaxBurst || s.For < 0 {
			return fmt.Errorf("burst of %d timers over %v: want 1..%d timers and a spread of 0 or more", s.Count, s.For, MaxBurst)
		}
		fallthrough
	case OpCreate, OpUpdate, OpDelete:
		if s.Timer == "" || s.Via < 1 || s.Via > p.Nodes || s.Client < 1 || s.Client > p.Clients {
			return fmt.Errorf("timer %q via n%d client %d out of range", s.Timer, s.Via, s.Client)
		}
		if s.Op != OpDelete && (s.Callback < 1 || s.Callback > p.Callbacks) {
			return fmt.Errorf("callback c%d out of range", s.Callback)
		}
		if s.Interval%time.Second != 0 || s.RepeatFor%time.Second != 0 || s.Interval < 0 || s.RepeatFor < 0 {
			return fmt.Errorf("interval %v and repeat-for %v must be whole seconds", s.Interval, s.RepeatFor)
		}
		if s.ID != 0 && s.Op != OpCreate {
			return fmt.Errorf("only a create chooses its timer's ID")
		}
		if s.Bare && s.Op != OpUpdate && s.Op != OpDelete {
			return fmt.Errorf("only an update or a delete names its timer by the bare ID")
		}
		if _, _, err := parseTag(s.Tag); s.Tag != "" && err != nil {
			return err
		}
	case OpHeal:
	case OpLose:
		if s.Timer == "" || s.Count < 0 || s.For <= 0 || !s.OneWay || len(s.Side) == 0 || len(s.Peers) == 0 {
			return fmt.Errorf("want: lose <hosts> -> <hosts> timer=<timer> [skip=<n>] for=<duration>")
		}
	case OpScaleUp, OpScaleDown:
		if len(s.Side) == 0 || len(s.Peers) > 0 {
			return fmt.Errorf("want: %s n<i> [n<j> ...]", s.Op)
		}
		for _, n := range s.Side {
			if err := p.validNode(n); err != nil || isRoleLike(n) {
				return fmt.Errorf("%q is not a node (want n<i>)", n)
			}
		}
	case OpExpect:
		if s.Check == nil {
			return fmt.Errorf("expect step without a check")
		}
		for _, h := range []string{s.Check.By, s.Check.On} {
			if err := p.validNode(h); h != "" && err != nil {
				return err
			}
		}
	case OpCrash, OpRestart, OpPause, OpResume, OpJump, OpDrift, OpDiskFull, OpDiskLie, OpDiskOK, OpDiskCorrupt:
		if len(s.Side) != 1 {
			return fmt.Errorf("want one node")
		}
		if err := p.validNode(s.Side[0]); err != nil {
			return err
		}
		if s.Op == OpDrift && (s.PPM < -MaxDriftPPM || s.PPM > MaxDriftPPM) {
			return fmt.Errorf("drift %d ppm beyond %d", s.PPM, MaxDriftPPM)
		}
	}
	for _, h := range append(append([]string{}, s.Side...), s.Peers...) {
		if isRoleLike(h) {
			if err := p.validRole(h); err != nil {
				return err
			}
			continue
		}
		if _, err := p.host(h); err != nil {
			return err
		}
	}
	return nil
}

// validNode checks a name that must be a node: n<i> or a role.
func (p *Plan) validNode(name string) error {
	if isRoleLike(name) {
		return p.validRole(name)
	}
	if _, err := p.host(name); err != nil || !strings.HasPrefix(name, "n") {
		return fmt.Errorf("%q is not a node (want n<i> or <timer>.<A..>)", name)
	}
	return nil
}

// host resolves a scenario host name (n3, c1) to its network address.
func (p *Plan) host(name string) (string, error) {
	var i int
	if _, err := fmt.Sscanf(name, "n%d", &i); err == nil && i >= 1 && i <= p.Nodes && name == fmt.Sprintf("n%d", i) {
		return p.nodeAddr(i), nil
	}
	if _, err := fmt.Sscanf(name, "c%d", &i); err == nil && i >= 1 && i <= p.Callbacks && name == fmt.Sprintf("c%d", i) {
		return callbackHost(i), nil
	}
	if _, err := fmt.Sscanf(name, "client%d", &i); err == nil && i >= 1 && i <= p.Clients && name == fmt.Sprintf("client%d", i) {
		return clientHost(i), nil
	}
	return "", fmt.Errorf("unknown host %q", name)
}

// nodeAddr is node i's address (1-based): the plan's choice (Addrs), or
// 10.0.0.<i>:7253.
func (p *Plan) nodeAddr(i int) string {
	if a, ok := p.Addrs[i]; ok {
		return a
	}
	return fmt.Sprintf("10.0.0.%d:7253", i)
}

// callbackHost is callback endpoint i's host (1-based).
func callbackHost(i int) string { return fmt.Sprintf("cb-%d.sim", i) }

// callbackURI is callback endpoint i's URI.
func callbackURI(i int) string { return "http://" + callbackHost(i) + "/cb" }

// clientHost is client i's host (1-based).
func clientHost(i int) string { return fmt.Sprintf("client-%d.sim", i) }

// parseTag splits a step's tag "<type>:<count>".
func parseTag(tag string) (string, int, error) {
	typ, count, ok := strings.Cut(tag, ":")
	n, err := strconv.Atoi(count)
	if !ok || typ == "" || err != nil || n < 1 {
		return "", 0, fmt.Errorf("tag %q: want <type>:<count>, count 1 or more", tag)
	}
	return typ, n, nil
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

// hasStepChecks reports whether the plan has "at <time> expect" steps.
func (p *Plan) hasStepChecks() bool {
	for _, s := range p.Steps {
		if s.Op == OpExpect {
			return true
		}
	}
	return false
}
