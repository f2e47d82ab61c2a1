package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
)

// Scaling, as an operator carries it out on production nodes (the
// original's scaling design, "Rebalancing timers - active method"):
//
//  1. The scaling configuration (the members, and the joining or leaving
//     nodes) goes into every node's configuration file. Joining machines
//     start with it, and resync at start-up as every node does; each
//     member reloads it at its own moment, and a reload that changes the
//     cluster view starts that node's resync.
//  2. The operator waits until the resync of every node has finished,
//     the leaving nodes' too (a leaving node's resync ends once it has
//     handed its copies to their new replicas, and it is stopped next),
//     and runs `service chronos resync` again on a node whose resync gave
//     up on a peer, failed to send a message or was refused a record at
//     a limit, a bounded number of times.
//  3. The final configuration (joining nodes become members, leaving ones
//     are removed) goes to every node, and the leaving nodes are stopped.
//
// The history records each scale (checker.Scale) and what every node held
// live when it completed and at the end of the run (checker.Held), for G6.

// Scaling bounds.
const (
	// scaleReloadSpread bounds how long after a scale starts each
	// member's reload arrives: nodes reload at different moments.
	scaleReloadSpread = 3 * time.Second
	// scalePoll is how often the operator looks at the resync status.
	scalePoll = time.Second
	// maxScaleRetries bounds how often the operator runs an incomplete
	// resync again on one node before giving the scale up.
	maxScaleRetries = 5
)

// scaleRun is the scale under way.
type scaleRun struct {
	idx     int // its entry in the history's Scales
	view    uint64
	staying []*machine
	leaving []*machine
	final   node.Membership
	// pending counts the reloads not delivered yet; retries the resyncs
	// run again per node.
	pending int
	retries map[*machine]int
}

// scale starts a scale-up (Side: the machines joining) or a scale-down
// (Side: the members leaving). A scale still under way delays the next;
// one given up stops the plan's scaling.
func (w *world) scale(s Step) {
	w.scaleTurn(w.scaleTickets, s)
	w.scaleTickets++
}

// scaleTurn starts scale s, the ticket-th of the plan, once every scale
// before it has started and none is under way: scales wait for each other
// in the plan's order, whichever of two waiting ones polls first.
func (w *world) scaleTurn(ticket int, s Step) {
	if w.scaling != nil || ticket != w.scaleStarted {
		w.loop.After(scalePoll, func() { w.scaleTurn(ticket, s) })
		return
	}
	w.scaleStarted++
	if w.scaleAbandoned() {
		w.tr.event("skip", string(s.Op), fmt.Sprint(s.Side), 0)
		return
	}
	names := w.hosts(s.Side)
	before := w.addrs()
	run := &scaleRun{idx: len(w.hist.Scales), retries: map[*machine]int{}}
	kind := checker.ScaleUp
	if s.Op == OpScaleUp {
		w.cluster = node.Membership{Nodes: before, Joining: names}
		run.final = node.Membership{Nodes: slices.Concat(before, names)}
	} else {
		kind = checker.ScaleDown
		staying := slices.DeleteFunc(slices.Clone(before), func(a string) bool { return slices.Contains(names, a) })
		w.cluster = node.Membership{Nodes: staying, Leaving: names}
		run.final = node.Membership{Nodes: staying}
	}
	w.twins.membershipChanged()
	run.view = node.NewRing(w.addrs()).ViewID()
	for _, m := range w.machines {
		switch {
		case slices.Contains(w.cluster.Leaving, m.addr):
			run.leaving = append(run.leaving, m)
		case slices.Contains(w.addrs(), m.addr):
			run.staying = append(run.staying, m)
		}
	}
	w.scaling = run
	w.hist.Scales = append(w.hist.Scales, checker.Scale{Kind: kind, Start: w.loop.Now(), Before: before, After: run.final.Nodes})
	w.fault(kind, names, nil, "")
	for _, a := range w.cluster.Joining {
		w.boot(w.machine(w.nodeName(a)))
	}
	// Every member of the old configuration reloads, leaving ones too.
	cfg := w.membership()
	for _, a := range before {
		m := w.machine(w.nodeName(a))
		run.pending++
		w.loop.After(time.Duration(w.scaleRand.Int64N(int64(scaleReloadSpread))), func() {
			run.pending--
			w.reload(m, cfg, func() {
				sc := &w.hist.Scales[run.idx]
				if sc.Reloaded == nil {
					sc.Reloaded = map[string]time.Duration{}
				}
				sc.Reloaded[m.addr] = w.loop.Now()
			})
		})
	}
	w.loop.After(scalePoll, w.pollScale)
}

// scaleAbandoned reports whether a scale of the run was given up: the
// configuration stays as it was left, and no later scale starts.
func (w *world) scaleAbandoned() bool {
	for _, s := range w.hist.Scales {
		if s.End == 0 {
			return true
		}
	}
	return false
}

// reload gives the node on m the configuration cfg, as SIGHUP after the
// file changed: on the node's process, so a paused node reloads when it
// resumes. A node down now boots with the configuration in force. took,
// if not nil, runs as the node takes it.
func (w *world) reload(m *machine, cfg node.Membership, took func()) {
	if m.node == nil || m.crashed || m.out {
		return
	}
	nd := m.node
	w.net.Run(m.addr, m.ep.Incarnation(), func() {
		w.tr.event("reload", m.addr, fmt.Sprint(cfg.Nodes, cfg.Joining, cfg.Leaving), 0)
		if err := nd.SetCluster(cfg); err != nil {
			panic(fmt.Sprintf("sim: reload of %s: %v", m.addr, err))
		}
		if took != nil {
			took()
		}
	})
}

// pollScale is the operator looking at every node's resync, the leaving
// nodes' included: it runs an incomplete one again, completes the scale
// once all have finished, or looks again later.
func (w *world) pollScale() {
	run := w.scaling
	done := run.pending == 0
	for _, m := range slices.Concat(run.staying, run.leaving) {
		if m.node == nil || m.crashed || m.paused {
			done = false // down or stopped: its status cannot be read
			continue
		}
		st := m.node.ResyncStatus()
		switch failed := st.Failed; {
		case st.Running || st.ViewID != run.view || st.Runs == 0:
			done = false
		case len(failed) > 0 || st.SendFailures > 0:
			done = false
			if run.retries[m] >= maxScaleRetries {
				w.tr.event("scale-given-up", m.addr, fmt.Sprint(failed), int64(st.SendFailures))
				w.scaling = nil
				return
			}
			run.retries[m]++
			w.tr.event("resync-again", m.addr, fmt.Sprint(failed), int64(st.SendFailures))
			m.node.Resync(false)
		}
	}
	if !done {
		w.loop.After(scalePoll, w.pollScale)
		return
	}
	w.completeScale(run)
}

// completeScale records what every node holds, gives the final
// configuration and stops the leaving nodes.
func (w *world) completeScale(run *scaleRun) {
	w.snapshot()
	w.cluster = run.final
	w.twins.membershipChanged()
	for _, m := range run.staying {
		w.reload(m, w.membership(), nil)
	}
	for _, m := range run.leaving {
		w.stop(m)
	}
	w.hist.Scales[run.idx].End = w.loop.Now()
	w.tr.event("scale-done", fmt.Sprint(w.addrs()), "", int64(run.idx))
	w.scaling = nil
}

// stop shuts a leaving node down for good, as the operator does once
// nothing depends on it.
func (w *world) stop(m *machine) {
	if m.node != nil {
		m.past.addNode(m.node)
		w.net.Crash(m.addr)
		m.clock.dropAlarms()
	}
	m.node, m.crashed, m.paused, m.out = nil, false, false, true
	w.tr.event("stop", m.addr, "", 0)
}

// snapshot records the timers every running node holds live now, and
// the definition (its opaque) of each (G6).
func (w *world) snapshot() {
	held := checker.Held{At: w.loop.Now(), Live: map[string][]uint64{}, Defs: map[string]map[uint64]string{}}
	for _, m := range w.machines {
		if m.node == nil {
			continue
		}
		var live []uint64
		defs := map[uint64]string{}
		m.node.Held(func(t *node.Timer) bool {
			if t.State == node.Live {
				live = append(live, t.ID)
				defs[t.ID] = t.Opaque()
			}
			return true
		})
		held.Live[m.addr], held.Defs[m.addr] = live, defs
	}
	w.hist.Held = append(w.hist.Held, held)
}
