package sim

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/netsim"
	"github.com/chronos-timer/chronos/node"
)

// Options tunes how a plan is run (not what it runs: that is the Plan).
type Options struct {
	// Trace, if set, receives the printed trace of the run.
	Trace io.Writer
	// Logger receives the nodes' logs; nil discards them.
	Logger *slog.Logger
	// TraceBodies adds the body of every delivered request to the trace.
	TraceBodies bool
	// TraceLogs prints the nodes' logs at debug level into the printed
	// trace, at the virtual time each line was written (outside the
	// trace hash). It replaces Logger.
	TraceLogs bool
	// ClientTimeout is how long a simulated client waits for an answer
	// before it fails over to another node.
	ClientTimeout time.Duration
	// Check runs the checkers on the history (the default); benchmarks
	// turn it off.
	SkipCheck bool
}

// clusterKey is the key every simulated node shares, as the members of a
// production cluster do.
const clusterKey = "simulated-cluster-key"

// DefaultClientTimeout is a client's patience per attempt.
const DefaultClientTimeout = 3 * time.Second

// Result is what one run produced.
type Result struct {
	Plan      *Plan
	History   *checker.History
	TraceHash uint64
	// RunHash is the trace hash before the run's last event, which
	// hashes the checker's count of violations: what every run of the
	// plan shares, checked or not (SkipCheck). Equal to TraceHash when a
	// panic ended the run.
	RunHash uint64
	Events  uint64
	// Violations are the checkers' findings plus the simulator's own
	// protocol checks (guarantee "API").
	Violations []checker.Violation
	// Panic is set when a node (or the simulator) panicked; the run
	// stopped there.
	Panic string
	// Unmet lists the scenario expectations that did not hold; Enforced
	// is false when the plan requires features not there yet.
	Unmet    []string
	Enforced bool
	// ScenarioErrors are steps the scenario got wrong (a role of a timer
	// whose ID is not known yet); they fail the run whatever it requires.
	ScenarioErrors []string
	// Replications is how many replication PUTs the nodes sent.
	Replications uint64
	// IDCollisions is how often a node met another timer under a timer's
	// ID (node.Stats.IDCollisions); Forbidden how many internal requests
	// were refused for want of the cluster key. Both are 0 in a healthy
	// simulated cluster, whose nodes derive distinct instance numbers and
	// share the key.
	IDCollisions uint64
	Forbidden    uint64
	// Probes counts the nodes' passes through each coverage probe, in
	// the order of node.ProbeNames (nil when no node ran).
	Probes []uint64
	// StormExcused counts, by excuse, the messages the storm check
	// (storm.go) saw repeated as a storm repeats and excused.
	StormExcused map[string]int
	Net          netsim.Stats
	// Coverage is how much of the history the checker held strictly to
	// each guarantee, and what excused the rest.
	Coverage checker.Coverage
}

// Failed reports whether the run broke a guarantee, panicked or missed an
// enforced expectation.
func (r *Result) Failed() bool {
	if r.Panic != "" || len(r.ScenarioErrors) > 0 {
		return true
	}
	if len(r.Plan.Expect) > 0 || r.Plan.hasStepChecks() {
		return r.Enforced && len(r.Unmet) > 0
	}
	return len(r.Violations) > 0
}

// world is the state of one run. Everything in it is touched only from
// the loop's goroutine.
type world struct {
	plan      *Plan
	opts      Options
	loop      netsim.Loop
	tr        *tracer
	net       *netsim.Network
	clockRand *rand.Rand
	machines  []*machine
	callbacks []*callback
	clients   []*netsim.Endpoint
	timers    map[string]*timerRef
	hist      checker.History
	apiErrs   []checker.Violation
	// stepUnmet are the step expectations that failed when they fired;
	// poppedMark is, per timer label, the end of the last "expect popped"
	// window; scenarioErrs are steps the scenario got wrong.
	stepUnmet    []string
	poppedMark   map[string]time.Duration
	scenarioErrs []string
	// cluster is the configuration in force (scale.go): what a node
	// booting now is given, and what the members' reloads carry.
	cluster node.Membership
	// scaling is the scale under way, nil when none; scaleRand draws the
	// moments its reloads reach the nodes, from a stream of its own so
	// that no other stream shifts.
	scaling   *scaleRun
	scaleRand *rand.Rand
	// diskRand draws what crashes keep of the simulated disks and where
	// they corrupt (disk.go), from a stream of its own.
	diskRand *rand.Rand
	// scaleTickets numbers the scale steps as they fire, scaleStarted
	// counts those started: they start in that order (scaleTurn).
	scaleTickets, scaleStarted int
	// twins records a shared-instance plan's misconfiguration (nil in
	// any other plan).
	twins *twins
	// ahead are the refusals of versions dated ahead whose end waits on
	// their receiver's clock (aheadRefusal, retimeAhead).
	ahead []aheadHold
	// lacking are the refusals at a limit whose end waits on their
	// receiver holding the timer (refusedAtLimit, watchLacking).
	lacking      []lackingHold
	lackingWatch bool
	// storm watches the internal requests of the liveness phase for a
	// message storm (storm.go).
	storm stormWatch
}

// machine is one simulated server: its clock outlives the nodes that run
// on it, one incarnation after another.
type machine struct {
	idx     int // 1-based
	addr    string
	clock   *Clock
	node    *node.Node
	ep      *netsim.Endpoint
	crashed bool
	paused  bool
	// out is set while the machine is outside the cluster: not yet
	// booted by a scale-up, or stopped after a scale-down.
	out bool
	// past sums the counters of dead incarnations.
	past counters
	// disk, in a plan with storage (MixStorage), outlives the nodes as
	// the clock does; storage is the running node's log on it.
	disk    *Disk
	storage *simStorage
}

// counters are node counters a run reports, summed over incarnations:
// statistics, and the passes through each coverage probe (in the order of
// node.ProbeNames).
type counters struct {
	replications, collisions, forbidden uint64
	probes                              []uint64
}

func (c *counters) add(o counters) {
	c.replications += o.replications
	c.collisions += o.collisions
	c.forbidden += o.forbidden
	if len(c.probes) < len(o.probes) {
		c.probes = append(c.probes, make([]uint64, len(o.probes)-len(c.probes))...)
	}
	for i, h := range o.probes {
		c.probes[i] += h
	}
}

// addNode adds the counters of an incarnation that ends, or of one alive
// when the run ends.
func (c *counters) addNode(n *node.Node) {
	s := n.Stats()
	c.add(counters{s.ReplicationsSent, s.IDCollisions, s.Forbidden, n.ProbeHits()})
}

// Run runs the plan and checks its history. It never panics: a panic in a
// node ends the run and is reported in the result.
func Run(p *Plan, opts Options) (res *Result) {
	if opts.ClientTimeout <= 0 {
		opts.ClientTimeout = DefaultClientTimeout
	}
	w := &world{plan: p, opts: opts, timers: map[string]*timerRef{}, poppedMark: map[string]time.Duration{}}
	w.tr = newTracer(opts.Trace, w.loop.Now)
	if opts.TraceLogs && opts.Trace != nil {
		w.opts.Logger = slog.New(&nodeLog{w: opts.Trace, now: w.loop.Now, level: slog.LevelDebug})
	}
	res = &Result{Plan: p, History: &w.hist}
	defer func() {
		if r := recover(); r != nil {
			res.Panic = fmt.Sprintf("panic at %v: %v\nthe run's last events:\n%s%s", w.loop.Now(), r, w.tr.recent(), debug.Stack())
			w.tr.note("PANIC %v", r)
		}
		res.TraceHash, res.Events = w.tr.h, w.loop.Processed()
		if res.Panic != "" {
			res.RunHash = res.TraceHash
		}
	}()
	if err := p.Validate(); err != nil {
		panic(err)
	}
	w.setup()
	w.schedule()
	w.loop.RunUntil(p.End)
	w.finish(res)
	return res
}

func (w *world) setup() {
	p := w.plan
	netRand := rand.New(hashedSource{stream(p.Seed, streamNetwork), w.tr})
	w.clockRand = rand.New(hashedSource{stream(p.Seed, streamClocks), w.tr})
	w.scaleRand = rand.New(hashedSource{stream(p.Seed, streamScale), w.tr})
	w.diskRand = rand.New(hashedSource{stream(p.Seed, streamDisk), w.tr})
	for _, i := range p.InitialMembers() {
		w.cluster.Nodes = append(w.cluster.Nodes, p.nodeAddr(i))
	}
	w.hist.Members = w.addrs()
	w.hist.Storage = p.enabled(MixStorage)
	w.hist.Epoch = Epoch
	w.twins = newTwins(w)
	var err error
	if w.net, err = netsim.New(p.Net, &w.loop, netRand); err != nil {
		panic(err)
	}
	if slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Op == OpReplay }) {
		w.net.CaptureFor()
	}
	w.net.SetTracer(func(what, from, to string, req *node.Request, n int64) {
		if kind, ok := messageFaults[what]; ok {
			w.messageFault(what, kind, from, to, req, n)
		}
		if what == "queued" || what == "shed" {
			w.overloadFault(from, to, req, time.Duration(n))
		}
		if what == "inbound" {
			w.queuedFault(from, to, req, time.Duration(n))
		}
		if req != nil {
			w.tr.request(what, from, to, req.Method, req.URL, n)
			if what == "deliver" && w.opts.TraceBodies && len(req.Body) > 0 {
				w.tr.print("  body %s", req.Body)
			}
			return
		}
		w.tr.event(what, from, to, n)
	})
	for i := 1; i <= p.Clients; i++ {
		w.clients = append(w.clients, w.net.Listen(clientHost(i), nil, false))
	}
	for i := 1; i <= p.Callbacks; i++ {
		w.callbacks = append(w.callbacks, w.newCallback(i))
	}
	for i := 1; i <= p.Nodes; i++ {
		m := &machine{idx: i, addr: p.nodeAddr(i)}
		// Machines boot with a small offset from true time.
		offset := time.Duration(w.clockRand.Int64N(int64(100*time.Millisecond))) - 50*time.Millisecond
		if i == 2 && p.enabled(MixSharedInstance) {
			// The twins' clocks agree, as NTP keeps them, so that they
			// issue IDs in the same milliseconds.
			offset = w.machines[0].clock.bootSkew
		}
		m.clock = newClock(&w.loop, offset, 0, func(inc uint64, f func()) { w.net.Run(m.addr, inc, f) })
		if p.enabled(MixStorage) {
			m.disk = NewDisk(w.diskRand)
		}
		w.machines = append(w.machines, m)
		if m.out = !slices.Contains(w.cluster.Nodes, m.addr); !m.out {
			w.boot(m)
		}
	}
}

// boot starts a node on the machine: empty, or with what its disk kept.
func (w *world) boot(m *machine) {
	var nd *node.Node
	m.ep = w.net.Listen(m.addr, func(from string, sent time.Duration, req node.Request, reply func(node.Response)) {
		req.Remote = from // the connection's source, as production sets it
		// The node dates req as it arrives (node's admit), and may
		// answer later: the window is judged at the same instant.
		apparent, outside := outsideAgeWindow(m, req)
		skew := m.clock.Skew()
		if !outside {
			// A node learns a peer's instance number only from a
			// request it admits (node's admit): one it dates out of
			// its age window tells it nothing.
			w.twins.served(m.addr, from, req)
			w.noteTold(m.addr, from, sent, req, nd)
		}
		held, shed := w.heldRecords(nd), shedCount(nd)
		had := heldVersion(nd, req)
		// Once Handle has returned (returned), shedHere says whether
		// the node shed a record while handling req: its applies are
		// synchronous, its answer may come later (see ownRefusal).
		returned, shedHere := false, false
		var early *node.Response
		nd.Handle(req, func(resp node.Response) {
			// A node's answers enter the history only where the
			// simulator's own state justifies them (a refusal by age,
			// at a limit or of a version ahead: refusal.go); a
			// collision answer never does: which timers may share an
			// ID the checker takes from the twins the plan configured
			// (sim/twins.go).
			w.ageRefusal(m, from, sent, apparent, skew, outside, req, resp)
			w.fullRefusal(m, nd, held, from, sent, req, resp)
			w.aheadRefusal(m, from, sent, req, resp)
			w.stormServe(m.addr, from, req, resp)
			w.clientOwnRefusal(m, nd, held, shed, had, sent, req, resp)
			if returned {
				w.ownRefusal(m, nd, held, shedHere, sent, req, resp)
			} else {
				early = &resp
			}
			reply(resp)
		})
		returned, shedHere = true, shedCount(nd) != shed
		if early != nil {
			w.ownRefusal(m, nd, held, shedHere, sent, req, *early)
		}
	}, true)
	m.clock.inc = m.ep.Incarnation()
	// Configured as production configures a node: its address, the
	// membership in force and the cluster key; its instance number is
	// derived.
	cfg := node.DefaultConfig()
	cfg.Address = m.addr
	cfg.Cluster = w.membership()
	cfg.ClusterKey = clusterKey
	// The node's jitter is drawn from the run's seed, a stream per
	// node and boot, as everything else random in a run.
	cfg.Seed = w.plan.Seed*0x100000001b3 + uint64(m.clock.inc)
	w.plan.Node.configure(&cfg)
	if sites := w.sites(); len(sites) > 1 {
		// Each site is its own cluster; instance numbers stay unique
		// across sites, as their operators configure them.
		home := w.siteOf(m.addr)
		cfg.Cluster.Nodes = sites[home]
		cfg.LocalSite = siteName(home)
		cfg.RemoteSites = nil
		for i, site := range sites {
			if i != home {
				cfg.RemoteSites = append(cfg.RemoteSites, node.Site{Name: siteName(i), Address: site[0]})
			}
		}
		ids, err := node.InstanceIDs(node.Membership{Nodes: w.addrs()})
		if err != nil {
			panic(err)
		}
		cfg.InstanceID = ids[m.addr]
	}
	if n := w.twins.booted(m.addr); n != node.AutoInstanceID {
		cfg.InstanceID = n
	}
	cfg.Clock = m.clock
	pages := &pageNet{w: w, m: m, inner: w.twins.network(m)}
	cfg.Network = pages
	cfg.Logger = w.nodeLogger(m, &nd)
	var kept []recovered
	if m.disk != nil {
		m.storage, kept = w.openStorage(m)
		cfg.Storage = m.storage
	}
	var err error
	if nd, err = node.New(cfg); err != nil {
		panic(fmt.Sprintf("node.New for %s: %v", m.addr, err))
	}
	pages.nd = nd
	// As the production binary does, the node holds what its disk kept
	// before it takes any request.
	if m.storage != nil {
		m.storage.restore(nd, kept)
	}
	m.node, m.crashed, m.paused, m.out = nd, false, false, false
	w.tr.event("boot", m.addr, "", int64(m.ep.Incarnation()))
	// As the production binary does at every start: fetch the timers this
	// node holds, so that a restarted node repopulates and a joining one
	// takes its share.
	nd.Resync(true)
}

// sharedInstance is the instance number a shared-instance plan configures
// n1 and n2 with: the lowest that no node derives, so that only those two
// collide.
func (w *world) sharedInstance() int {
	derived, err := node.InstanceIDs(w.membership())
	if err != nil {
		panic(err)
	}
	taken := map[int]bool{}
	for _, id := range derived {
		taken[id] = true
	}
	shared := 0
	for taken[shared] {
		shared++
	}
	return shared
}

// sites lists each site's members when the plan splits the nodes into
// two sites (mixSites), and nil otherwise.
func (w *world) sites() [][]string {
	if !w.plan.enabled(mixSites) {
		return nil
	}
	all := w.addrs()
	half := (len(all) + 1) / 2
	return [][]string{all[:half:half], all[half:]}
}

// siteOf is the index in sites of the site addr belongs to.
func (w *world) siteOf(addr string) int {
	return slices.IndexFunc(w.sites(), func(site []string) bool { return slices.Contains(site, addr) })
}

func siteName(i int) string { return fmt.Sprintf("site%d", i+1) }

// addrs lists the members in force, the nodes timers are placed on: the
// steady and joining nodes of the configuration (leaving nodes only hold
// what they had).
func (w *world) addrs() []string {
	return slices.Concat(w.cluster.Nodes, w.cluster.Joining)
}

// membership is the configuration in force, as a node is given it.
func (w *world) membership() node.Membership {
	return node.Membership{Nodes: slices.Clone(w.cluster.Nodes), Joining: slices.Clone(w.cluster.Joining),
		Leaving: slices.Clone(w.cluster.Leaving)}
}

// schedule puts every step of the plan on the loop.
func (w *world) schedule() {
	for _, s := range w.plan.Steps {
		w.loop.At(s.At, func() { w.step(s) })
	}
	if w.plan.LivenessFrom > clockSyncLead {
		w.loop.At(w.plan.LivenessFrom-clockSyncLead, w.syncClocks)
		w.loop.At(w.plan.LivenessFrom, w.liveness)
	}
}

func (w *world) finish(res *Result) {
	h := &w.hist
	h.End = w.plan.End
	// What the nodes hold at the end of every run: G6 judges the
	// placement of a run that scaled, and the definitions of every run
	// once repair has had its rounds. The loop ran every event up to
	// the end, so what they hold then is what they hold at the end.
	w.snapshot()
	h.Held[len(h.Held)-1].At = h.End
	h.Sites = w.sites()
	h.MaxNetDelay = w.plan.Net.MaxDelay()
	h.LivenessFrom = w.plan.LivenessFrom
	// A pop can be early by the boot offsets' spread plus every clock's
	// forward movement: start times are relayed from node to node as
	// deltas, so each clock that moved ahead while it held the schedule
	// adds its movement (see Clock.Forward).
	var lo, hi, fwd time.Duration
	for _, m := range w.machines {
		l, h := m.clock.bootSkew, m.clock.bootSkew
		lo, hi, fwd = min(lo, l), max(hi, h), fwd+m.clock.Forward()
	}
	h.MaxClockSkew = hi - lo + fwd
	var total counters
	for _, m := range w.machines {
		total.add(m.past)
		if m.node != nil {
			total.addNode(m.node)
		}
	}
	res.Replications, res.IDCollisions, res.Forbidden = total.replications, total.collisions, total.forbidden
	res.Probes = total.probes
	res.Net = w.net.Stats()
	w.checkTags()
	w.checkStorm(res)
	res.Violations = append(res.Violations, w.apiErrs...)
	if !w.opts.SkipCheck {
		vs, cov := check(h)
		res.Violations = append(res.Violations, vs...)
		res.Coverage = cov
	}
	res.Enforced = true
	for _, r := range w.plan.Requires {
		if r == "replication" && res.Replications == 0 {
			res.Enforced = false
		}
	}
	res.ScenarioErrors = w.scenarioErrs
	res.Unmet = append(append(append([]string{}, w.scenarioErrs...), w.stepUnmet...), w.expectations(res)...)
	res.RunHash = w.tr.h
	w.tr.event("end", "", "", int64(len(res.Violations)))
}

// checkTags holds each live node's per-tag statistics to the timers it
// holds: the count of a tag is the sum of its counts over the live records
// carrying it (api.md statistics), whatever updates, deletes, pops and
// failed callbacks came before. A mismatch is a TAGS violation.
func (w *world) checkTags() {
	for _, m := range w.machines {
		if m.node == nil {
			continue
		}
		want := map[string]int{}
		m.node.Held(func(t *node.Timer) bool {
			if t.State == node.Live {
				for _, tag := range t.Tags() {
					want[tag.Type] += tag.Count
				}
			}
			return true
		})
		got := m.node.Stats().Tags
		for _, k := range slices.Sorted(maps.Keys(mergeKeys(want, got))) {
			if want[k] != got[k] {
				msg := fmt.Sprintf("%s counts %d for statistics tag %q but holds live timers carrying %d", m.addr, got[k], k, want[k])
				w.apiErrs = append(w.apiErrs, checker.Violation{Guarantee: "TAGS", At: w.loop.Now(), Message: msg})
			}
		}
	}
}

func mergeKeys(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k := range a {
		out[k] = 0
	}
	for k := range b {
		out[k] = 0
	}
	return out
}
