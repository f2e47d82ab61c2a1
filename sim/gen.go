package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/chronos-timer/chronos/netsim"
)

// Source is where a plan generator draws its choices: a seeded PCG for
// seeds, or a rapid.T so that failing plans shrink.
type Source interface {
	// IntN returns a choice in [0, n).
	IntN(label string, n int) int
}

type pcgSource struct{ r *rand.Rand }

func (s pcgSource) IntN(_ string, n int) int { return s.r.IntN(n) }

// RapidSource draws plan choices from rapid, which shrinks them toward 0.
type RapidSource struct{ T *rapid.T }

// IntN draws from rapid.
func (s RapidSource) IntN(label string, n int) int { return rapid.IntRange(0, n-1).Draw(s.T, label) }

// Fault kinds a generated plan may enable (swarm testing: each seed enables
// a different subset, so rare combinations get runs of their own).
var faultKinds = []string{"crash", "pause", "partition", "one-way", "clog", "clock-jump", "clock-drift",
	"slow-callback", "fail-callback", "loss", "duplicate", "reorder"}

// MixSharedInstance in a plan's mix configures nodes n1 and n2 with one
// instance number, so that they issue colliding IDs.
const MixSharedInstance = "shared-instance"

// mixSites in a plan's mix splits the nodes into two sites of equal size
// (n1.. the first half in site1, the rest in site2), each its own cluster,
// forwarding every timer and pop notice to the other through its first
// node, as the original deploys geographic redundancy. Give it an even
// number of nodes: a remote replica's rank counts its own site's
// replicas, and the checker's placement assumes sites of one size.
const mixSites = "sites"

// mixLoad in a plan's mix gives every host a modelled CPU (modest service
// times, well within what a burst of the plan needs) and adds a burst of
// timers due in the same second, so that G4 is judged under load too.
const mixLoad = "load"

// mixScale in a plan's mix adds a scale-up (one or two machines outside
// the cluster join), a scale-down (a member leaves) or both, with crashes,
// pauses and partitions of the enabled kinds while the resync runs.
const mixScale = "scale"

// MixStorage in a plan's mix gives every node a simulated disk
// (disk.go): a node keeps its records across crashes, and a crash takes
// an acknowledged copy only through a disk fault. Its plans add
// whole-cluster crashes and disk faults.
const MixStorage = "storage"

// genStorage adds what a plan with storage tests: one time in two a crash
// of every node at once, all back together or one after another, and one
// time in two up to three disk faults, each on a node that then crashes
// so that the fault matters (a lie or a full disk loses what was not
// truly synced; a corrupt disk is found at the restart and wiped).
func genStorage(p *Plan, src Source, safety time.Duration) {
	if src.IntN("whole-cluster", 2) == 0 {
		at := time.Duration(src.IntN("whole-at", int(safety/time.Second))) * time.Second
		back := at + time.Duration(1+src.IntN("whole-for", 10))*time.Second
		stagger := time.Duration(src.IntN("whole-stagger", 3)) * time.Second
		for i := 1; i <= p.Nodes; i++ {
			n := []string{fmt.Sprintf("n%d", i)}
			p.Steps = append(p.Steps, Step{At: at, Op: OpCrash, Side: n})
			if r := back + time.Duration(i-1)*stagger; r < safety {
				p.Steps = append(p.Steps, Step{At: r, Op: OpRestart, Side: n})
			}
		}
	}
	if src.IntN("disk-faults", 2) == 0 {
		return
	}
	for range 1 + src.IntN("disk-count", 3) {
		n := []string{fmt.Sprintf("n%d", 1+src.IntN("disk-node", p.Nodes))}
		at := time.Duration(src.IntN("disk-at", int(safety/time.Second))) * time.Second
		crash := at + time.Duration(1+src.IntN("disk-crash-after", 10))*time.Second
		switch src.IntN("disk-kind", 3) {
		case 0:
			p.Steps = append(p.Steps, Step{At: at, Op: OpDiskFull, Side: n}, Step{At: crash, Op: OpDiskOK, Side: n})
		case 1:
			p.Steps = append(p.Steps, Step{At: at, Op: OpDiskLie, Side: n})
		default:
			p.Steps = append(p.Steps, Step{At: at, Op: OpDiskCorrupt, Side: n})
		}
		if crash < safety {
			p.Steps = append(p.Steps, Step{At: crash, Op: OpCrash, Side: n})
			if back := crash + time.Duration(1+src.IntN("disk-back", 5))*time.Second; back < safety {
				p.Steps = append(p.Steps, Step{At: back, Op: OpRestart, Side: n})
			}
		}
	}
}

// Scale generation bounds.
const (
	// genScaleFaultsMax bounds the faults drawn around a scale.
	genScaleFaultsMax = 3
	// genScaleRunway is how long the run goes on after the last scale
	// step and after the liveness phase, so that a scale held up by
	// faults completes once they stop: a resync gives a peer up after
	// about 91 s.
	genScaleRunway = 2 * time.Minute
)

// genScale adds the scale steps of a scale mix and the faults around them.
func genScale(p *Plan, src Source, safety time.Duration) {
	first := p.Nodes
	kind := src.IntN("scale-kind", 4) // 0, 1: up; 2: down; 3: up, then down
	at := genScaleFirst + time.Duration(src.IntN("scale-at", int((safety-2*genScaleFirst)/time.Second)))*time.Second
	var steps []Step
	if kind != 2 {
		s := Step{At: at, Op: OpScaleUp}
		for range 1 + src.IntN("scale-joining", 2) {
			p.Nodes++
			s.Side = append(s.Side, fmt.Sprintf("n%d", p.Nodes))
		}
		steps = append(steps, s)
	}
	if kind >= 2 {
		if kind == 3 {
			at += time.Duration(20+src.IntN("scale-gap", 40)) * time.Second
		}
		steps = append(steps, Step{At: at, Op: OpScaleDown, Side: []string{fmt.Sprintf("n%d", 1+src.IntN("scale-leaving", first))}})
	}
	p.Steps = append(p.Steps, steps...)
	for _, s := range steps {
		genScaleFaults(p, src, s.At, safety)
	}
	p.End = max(p.End, at+genScaleRunway, safety+genScaleRunway)
}

// genScaleFirst is the earliest a generated scale starts, and how long
// before the liveness phase the first one starts at the latest.
const genScaleFirst = 5 * time.Second

// genLoad turns the load model on and adds a burst of 50 to 500 timers
// created within 100 ms, so that they fall due together.
func genLoad(p *Plan, src Source, safety time.Duration) {
	p.Net.NodeWorkers, p.Net.NodeServiceTime, p.Net.NodeSendTime = 2, 20*time.Microsecond, 50*time.Microsecond
	p.Net.EndpointWorkers, p.Net.EndpointServiceTime = 4, time.Millisecond
	s := genTimerStep(p, src, OpBurst, "L", time.Duration(src.IntN("load-at", int(safety/time.Second)))*time.Second)
	s.Count, s.For, s.ID = 50+src.IntN("load-count", 451), 100*time.Millisecond, 0
	p.Steps = append(p.Steps, s)
	p.End = max(p.End, s.At+s.For+s.span()+genSettle)
}

// Generation bounds.
const (
	genSafetyMin = 40 * time.Second
	genSafetyMax = 120 * time.Second
	genTimersMax = 30
	genFaultsMax = 12
	// genSettle is the slack after the last due pop before the run ends:
	// backup skews, callback timeouts, retries and backward clock jumps.
	genSettle = 30 * time.Second
	// genQuiet is how long a run lasts at least after the liveness phase
	// began: the faults' settle time (5 s) and a repair round after it
	// (checker's repairRoundBound, about 41 s), so that G6 judges the
	// definitions every node holds at the end (checkVersions).
	genQuiet = time.Minute
)

// Generate returns the plan of a seed: its fault mix, workload and fault
// schedule drawn from the seed's workload and fault streams.
func Generate(seed uint64) *Plan {
	return GeneratePlan(seed, pcgSource{rand.New(stream(seed, streamWorkload))}, pcgSource{rand.New(stream(seed, streamFaults))})
}

// GeneratePlan draws a plan: the workload from work, the faults from faults.
func GeneratePlan(seed uint64, work, faults Source) *Plan {
	p := &Plan{Name: fmt.Sprintf("seed-%d", seed), Seed: seed, Net: netsim.DefaultOptions()}
	p.Nodes = 3 + work.IntN("nodes", 3)
	p.Callbacks = 1 + work.IntN("callbacks", 3)
	p.Clients = 1 + work.IntN("clients", 3)
	safety := genSafetyMin + time.Duration(work.IntN("safety", int((genSafetyMax-genSafetyMin)/time.Second)+1))*time.Second
	for _, k := range faultKinds {
		if faults.IntN("mix:"+k, 2) == 1 {
			p.Mix = append(p.Mix, k)
		}
	}
	genNet(p, faults)
	last := genWorkload(p, work, safety)
	if len(p.Mix) > 0 {
		genFaults(p, faults, safety)
	}
	p.LivenessFrom = safety
	p.End = max(safety+genSettle, last+genSettle)
	// A misconfiguration rather than a fault, drawn last so that it moves
	// no other draw: two nodes configured with one instance number, which
	// the node's collision defence must make harmless.
	if faults.IntN("mix:"+MixSharedInstance, 8) == 0 {
		p.Mix = append(p.Mix, MixSharedInstance)
		genTwinBurst(p, faults, safety)
		slices.SortStableFunc(p.Steps, func(a, b Step) int { return int(a.At - b.At) })
	}
	if work.IntN("mix:"+mixLoad, 4) == 0 {
		p.Mix = append(p.Mix, mixLoad)
		genLoad(p, work, safety)
	}
	// One four-node plan in three runs as two sites of two, drawn last
	// for the same reason.
	if p.Nodes == 4 && work.IntN("mix:"+mixSites, 3) == 0 {
		p.Mix = append(p.Mix, mixSites)
	}
	// One plan in three of one site scales, drawn last for the same
	// reason (a scale of two sites is not modelled).
	if !p.enabled(mixSites) && work.IntN("mix:"+mixScale, 3) == 0 {
		p.Mix = append(p.Mix, mixScale)
		genScale(p, work, safety)
	}
	// One plan in two keeps the nodes' records on disk, drawn last for
	// the same reason.
	if faults.IntN("mix:"+MixStorage, 2) == 0 {
		p.Mix = append(p.Mix, MixStorage)
		genStorage(p, faults, safety)
	}
	genReach(p, work, safety)
	genRecreate(p, work)
	genLate(p, faults, safety)
	genReachFaults(p, faults, safety)
	genStale(p, faults, safety)
	genLoss(p, faults, safety)
	genRetryAhead(p, faults, safety)
	genTwinRestart(p, faults)
	genUnpopped(p, faults, safety)
	genLastHolder(p, work)
	genMovedBack(p, work)
	genHeldAnswer(p, faults, safety)
	genStaleHeld(p, faults, safety)
	genRestartWord(p, faults)
	p.End = max(p.End, p.LivenessFrom+genQuiet)
	slices.SortStableFunc(p.Steps, func(a, b Step) int { return int(a.At - b.At) })
	return p
}

func (p *Plan) enabled(kind string) bool { return slices.Contains(p.Mix, kind) }

func genNet(p *Plan, src Source) {
	if p.enabled("loss") {
		p.Net.LossRate = float64(1+src.IntN("loss", 10)) / 100
	}
	if p.enabled("duplicate") {
		p.Net.DuplicateRate = float64(1+src.IntN("dup", 10)) / 100
	}
	if p.enabled("reorder") {
		p.Net.ReorderRate = float64(1+src.IntN("reorder", 30)) / 100
	}
}

// genTwinBurst adds creates through the two nodes that share an instance
// number, all in one instant, so that their IDs collide: the generated
// workload alone seldom creates through both in one millisecond.
func genTwinBurst(p *Plan, src Source, safety time.Duration) {
	at := time.Duration(src.IntN("burst-at", int(safety/time.Second)*10)) * time.Second / 10
	twinBurst(p, src, "b", at)
}

// twinBurst adds 2 to 16 creates at at, through n1 and n2 in turn,
// labelled prefix1, prefix2...
func twinBurst(p *Plan, src Source, prefix string, at time.Duration) {
	for i := range 2 * (1 + src.IntN("burst", 8)) {
		s := genTimerStep(p, src, OpCreate, fmt.Sprintf("%s%d", prefix, i+1), at)
		s.Via = 1 + i%2
		p.Steps = append(p.Steps, s)
		p.End = max(p.End, s.At+s.span()+genSettle)
	}
}

var genIntervals = []time.Duration{1, 2, 3, 5, 10, 15, 20, 30}

// genWorkload adds timer lifecycles (a create, maybe updates, maybe a
// delete) and returns when the last pop could fall due.
func genWorkload(p *Plan, src Source, safety time.Duration) (last time.Duration) {
	n := 1 + src.IntN("timers", genTimersMax)
	for i := 1; i <= n; i++ {
		label := fmt.Sprintf("t%d", i)
		at := time.Duration(src.IntN("create-at", int(safety/time.Second)*10)) * time.Second / 10
		s := genTimerStep(p, src, OpCreate, label, at)
		if src.IntN("chosen-id", 8) == 0 {
			// A client-chosen ID (a PUT to a new ID), with the top bit
			// set: far from the IDs nodes issue, which count
			// milliseconds from 2020.
			s.ID = 1<<63 | uint64(src.IntN("id-hi", 1<<31))<<31 | uint64(src.IntN("id-lo", 1<<31))
		}
		p.Steps = append(p.Steps, s)
		last = max(last, s.At+s.span())
		for range src.IntN("updates", 3) {
			at += time.Duration(1+src.IntN("update-after", 300)) * time.Second / 10
			if at >= safety {
				break
			}
			u := genTimerStep(p, src, OpUpdate, label, at)
			u.RF = s.RF // a PUT cannot change the replication factor
			p.Steps = append(p.Steps, u)
			last = max(last, u.At+u.span())
			if src.IntN("concurrent", 6) == 0 {
				// Another write of the same timer through another node
				// in the same instant: an update, or a delete.
				c := genTimerStep(p, src, OpUpdate, label, at)
				c.RF, c.Via = s.RF, 1+(u.Via%p.Nodes)
				if src.IntN("concurrent-delete", 3) == 0 {
					c = Step{At: at, Op: OpDelete, Timer: label, Client: c.Client, Via: c.Via}
				}
				p.Steps = append(p.Steps, c)
				last = max(last, c.At+c.span())
			}
		}
		if src.IntN("delete", 4) == 0 {
			if at += time.Duration(1+src.IntN("delete-after", 300)) * time.Second / 10; at >= safety {
				continue
			}
			p.Steps = append(p.Steps, Step{At: at, Op: OpDelete, Timer: label,
				Client: 1 + src.IntN("client", p.Clients), Via: 1 + src.IntN("via", p.Nodes)})
		}
	}
	return last
}

func genTimerStep(p *Plan, src Source, op Op, label string, at time.Duration) Step {
	s := Step{At: at, Op: op, Timer: label, Client: 1 + src.IntN("client", p.Clients), Via: 1 + src.IntN("via", p.Nodes),
		Callback: 1 + src.IntN("cb", p.Callbacks), RF: 1 + src.IntN("rf", 3)}
	s.Interval = genIntervals[src.IntN("interval", len(genIntervals))] * time.Second
	if k := src.IntN("repeats", 7); k > 0 {
		s.RepeatFor = time.Duration(k) * s.Interval
	}
	// The edges of api.md's timing, so that every branch of it runs.
	switch src.IntN("timing", 24) {
	case 0: // interval 0: one pop, at once
		s.Interval, s.RepeatFor = 0, 0
	case 1: // repeat-for below the interval: never pops
		if s.Interval >= 2*time.Second {
			s.RepeatFor = s.Interval - time.Second
		}
	case 2, 3: // repeat-for not a multiple of the interval
		if s.Interval >= 2*time.Second {
			s.RepeatFor = time.Duration(1+src.IntN("whole", 4))*s.Interval + time.Duration(1+src.IntN("part", int(s.Interval/time.Second)-1))*time.Second
		}
	case 4: // due beyond the store's coarse wheel: hours away
		s.Interval = genLongIntervals[src.IntN("long", len(genLongIntervals))]
		s.RepeatFor = time.Duration(1+src.IntN("long-repeats", 2)) * s.Interval
	}
	if src.IntN("rf-over", 12) == 0 {
		// More replicas than members: placement takes every member.
		s.RF = min(p.Nodes+1+src.IntN("rf-extra", 3), genMaxRF)
	}
	if src.IntN("tag", 6) == 0 {
		s.Tag = fmt.Sprintf("tag%d:%d", src.IntN("tag-type", 3), 1+src.IntN("tag-count", 3))
	}
	return s
}

// genLongIntervals are the hour-long intervals of timers due beyond the
// store's coarse wheel (cheap in virtual time).
var genLongIntervals = []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}

// genMaxRF is the largest replication factor the API takes.
const genMaxRF = 16

// span is how long after the step its timer may still pop.
func (s Step) span() time.Duration {
	return max(s.Interval, s.RepeatFor) + time.Duration(max(s.RF, 1))*2*time.Second
}

// genFaults adds a schedule of faults of the enabled kinds, each undone
// after a while (or at the liveness phase).
func genFaults(p *Plan, src Source, safety time.Duration) {
	var kinds []string
	for _, k := range p.Mix {
		if k != "loss" && k != "duplicate" && k != "reorder" {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return
	}
	for range 1 + src.IntN("faults", 1+src.IntN("density", genFaultsMax)) {
		at := time.Duration(src.IntN("fault-at", int(safety/time.Second))) * time.Second
		dur := time.Duration(1+src.IntN("fault-for", 30)) * time.Second
		genFault(p, src, kinds[src.IntN("kind", len(kinds))], at, dur, safety)
	}
}

func genFault(p *Plan, src Source, kind string, at, dur, safety time.Duration) {
	n := fmt.Sprintf("n%d", 1+src.IntN("node", p.Nodes))
	cb := fmt.Sprintf("c%d", 1+src.IntN("callback", p.Callbacks))
	undo := func(s Step) {
		if s.At = at + dur; s.At < safety {
			p.Steps = append(p.Steps, s)
		}
	}
	switch kind {
	case "crash":
		p.Steps = append(p.Steps, Step{At: at, Op: OpCrash, Side: []string{n}})
		undo(Step{Op: OpRestart, Side: []string{n}})
	case "pause":
		p.Steps = append(p.Steps, Step{At: at, Op: OpPause, Side: []string{n}})
		undo(Step{Op: OpResume, Side: []string{n}})
	case "partition", "one-way":
		side, peers := genSplit(p, src)
		p.Steps = append(p.Steps, Step{At: at, Op: OpPartition, Side: side, Peers: peers, OneWay: kind == "one-way"})
		undo(Step{Op: OpHeal})
		if slices.Contains(p.Mix, "crash") && src.IntN("cascade", 3) == 0 && at+dur < safety {
			// Failures come together: a node of the side cut off
			// crashes while the split lasts, losing what it alone took.
			crash := side[src.IntN("cascade-node", len(side))]
			when := at + time.Duration(src.IntN("cascade-at", int(dur/(100*time.Millisecond))+1))*100*time.Millisecond
			p.Steps = append(p.Steps, Step{At: when, Op: OpCrash, Side: []string{crash}})
			if back := when + time.Duration(1+src.IntN("cascade-for", 10))*time.Second; back < safety {
				p.Steps = append(p.Steps, Step{At: back, Op: OpRestart, Side: []string{crash}})
			}
		}
	case "clog":
		side, peers := genSplit(p, src)
		p.Steps = append(p.Steps, Step{At: at, Op: OpClog, Side: side[:1], Peers: peers[:1], OneWay: true,
			For: time.Duration(1+src.IntN("clog-for", 50)) * 100 * time.Millisecond})
	case "clock-jump":
		d := time.Duration(1+src.IntN("jump", 50)) * 100 * time.Millisecond
		if src.IntN("jump-back", 2) == 1 {
			d = -d
		}
		p.Steps = append(p.Steps, Step{At: at, Op: OpJump, Side: []string{n}, Delta: d})
	case "clock-drift":
		ppm := int64(src.IntN("ppm", 2*MaxDriftPPM+1) - MaxDriftPPM)
		p.Steps = append(p.Steps, Step{At: at, Op: OpDrift, Side: []string{n}, PPM: ppm})
	case "slow-callback":
		p.Steps = append(p.Steps, Step{At: at, Op: OpSlow, Side: []string{cb},
			Delta: 2*time.Second + time.Duration(1+src.IntN("slow", 30))*100*time.Millisecond})
		undo(Step{Op: OpCallbackOK, Side: []string{cb}})
	case "fail-callback":
		if src.IntN("fail-brief", 2) == 0 {
			// A blip shorter than the backup skew: the next replica's
			// pop of a refused one is accepted.
			dur = time.Duration(1+src.IntN("fail-for", 15)) * 100 * time.Millisecond
		}
		p.Steps = append(p.Steps, Step{At: at, Op: OpFail, Side: []string{cb}, Status: []int{500, 503}[src.IntN("status", 2)]})
		undo(Step{Op: OpCallbackOK, Side: []string{cb}})
	}
}

// genSplit splits the nodes into two non-empty sides, sometimes with a
// callback endpoint cut off with the minority.
func genSplit(p *Plan, src Source) (side, peers []string) {
	for i := 1; i <= p.Nodes; i++ {
		if src.IntN("side", 2) == 0 {
			side = append(side, fmt.Sprintf("n%d", i))
		} else {
			peers = append(peers, fmt.Sprintf("n%d", i))
		}
	}
	// Move one node over to an empty side, copying so that the append
	// below cannot write into the other side's array.
	if len(side) == 0 {
		side, peers = []string{peers[0]}, peers[1:]
	}
	if len(peers) == 0 {
		peers, side = []string{side[0]}, side[1:]
	}
	if src.IntN("cut-callback", 4) == 0 {
		peers = append(peers, fmt.Sprintf("c%d", 1+src.IntN("callback", p.Callbacks)))
	}
	return side, peers
}
