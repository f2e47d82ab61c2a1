package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// step carries out one step of the plan.
func (w *world) step(written Step) {
	s, err := w.resolveStep(written)
	if err != nil {
		w.scenarioError(written, err)
		return
	}
	switch s.Op {
	case OpExpect:
		w.checkStep(written, s.Check)
	case OpCreate, OpUpdate, OpDelete:
		w.clientOperation(s)
	case OpBurst:
		w.burst(s)
	case OpCrash:
		w.crash(w.machine(s.Side[0]))
	case OpRestart:
		w.restart(w.machine(s.Side[0]))
	case OpPause:
		m := w.machine(s.Side[0])
		if !m.crashed && !m.paused && !m.out {
			m.paused = true
			w.net.Pause(m.addr)
			w.fault(checker.Pause, []string{m.addr}, nil, "")
		}
	case OpResume:
		w.resume(w.machine(s.Side[0]))
	case OpPartition:
		w.partition(s)
	case OpHeal:
		w.net.HealAll()
		w.fault(checker.Heal, nil, nil, "")
	case OpClog:
		for _, a := range w.hosts(s.Side) {
			for _, b := range w.hosts(s.Peers) {
				w.net.Clog(a, b, w.loop.Now()+s.For)
			}
		}
		w.fault(checker.Clog, w.hosts(s.Side), w.hosts(s.Peers), "for="+s.For.String())
	case OpHold:
		for _, a := range w.hosts(s.Side) {
			for _, b := range w.hosts(s.Peers) {
				w.net.Hold(a, b)
			}
		}
		w.fault(checker.Clog, w.hosts(s.Side), w.hosts(s.Peers), "hold")
	case OpLose:
		w.lose(s)
	case OpReplay:
		for _, a := range w.hosts(s.Side) {
			for _, b := range w.hosts(s.Peers) {
				w.net.Replay(a, b, w.loop.Now()-s.For)
			}
		}
	case OpJump:
		m := w.machine(s.Side[0])
		m.clock.Jump(s.Delta)
		w.fault(checker.ClockJump, []string{m.addr}, nil, signed(s.Delta))
	case OpDrift:
		m := w.machine(s.Side[0])
		m.clock.SetDrift(s.PPM)
		w.fault(checker.ClockDrift, []string{m.addr}, nil, fmt.Sprintf("%dppm", s.PPM))
	case OpSlow, OpFail, OpCallbackOK:
		w.callbackMode(s)
	case OpScaleUp, OpScaleDown:
		w.scale(s)
	case OpDiskFull, OpDiskLie, OpDiskOK, OpDiskCorrupt:
		w.diskFault(s)
	default:
		panic(fmt.Sprintf("sim: unknown step %q", s.Op))
	}
}

// burst schedules the creates of a burst step, spread evenly over s.For.
func (w *world) burst(s Step) {
	for i := range s.Count {
		c := s
		c.Op, c.Timer = OpCreate, fmt.Sprintf("%s%d", s.Timer, i+1)
		w.loop.After(s.For*time.Duration(i)/time.Duration(s.Count), func() { w.clientOperation(c) })
	}
}

// messageFaults maps the network's trace words for a message it lost,
// duplicated or held back to the fault the history records.
var messageFaults = map[string]checker.FaultKind{
	"lost":       checker.Lost,
	"duplicated": checker.Duplicated,
	"reordered":  checker.Reordered,
	"late":       checker.Late,
	"replayed":   checker.Late,
}

// overloadWait is how long a send may wait for its sender's modelled CPU
// before the history records it as an Overload fault: well inside G3's
// strict slack, so the load a healthy cluster takes goes unexcused, and
// a backlog beyond it excuses only the timers whose messages waited.
const overloadWait = 50 * time.Millisecond

// overloadFault records a send that waited longer than overloadWait for
// its sender's CPU (wait > 0) or was shed (wait 0). The history records
// how long the message took to leave: its wait for a worker and then its
// own write (NodeSendTime), the moment the checker reads as the one it
// left (leftAfter). A crash in its write takes it, as one in its wait. A
// callback's names the pop it carried (CallbackDetail), which a crash
// that takes it takes, whenever its sender's clock made it due; a shed
// callback's names it too, an attempt of that pop that failed.
func (w *world) overloadFault(from, to string, req *node.Request, wait time.Duration) {
	detail := checker.ShedDetail
	if wait > 0 {
		if wait <= overloadWait {
			return
		}
		detail = checker.OverloadWaited + (wait + w.plan.Net.NodeSendTime).String()
		if carriesRecord(req) {
			detail += checker.OverloadRecord
		}
	}
	if seq := req.Header.Get(wire.HeaderSequenceNumber); seq != "" && !carriesRecord(req) && timerOfURL(req.URL) == 0 {
		// A callback: a crash that takes it before it left takes
		// that pop's attempt, whenever its sender made it; one shed
		// never left, and is that pop's failed attempt as a callback
		// the network lost is (the node takes it as failed, 4.7).
		detail += " " + checker.CallbackDetail + seq
	}
	w.hist.Faults = append(w.hist.Faults, checker.Fault{At: w.loop.Now(), Kind: checker.Overload,
		Nodes: []string{from}, Peers: []string{to}, Detail: detail, Timer: timerOfRequest(req)})
}

// queuedFault records a request that waited longer than overloadWait in
// its receiver's inbound queue for the receiver's modelled CPU: the
// receiver processed it that much late.
//
// Only requests a node sent about a timer are recorded: a client's write
// waits in its proxy's queue within its own invoke and return, which
// already bound its start, and a request about no timer touches none.
func (w *world) queuedFault(from, to string, req *node.Request, wait time.Duration) {
	if wait <= overloadWait || w.machineAt(from) == nil || timerOfRequest(req) == 0 {
		return
	}
	detail := checker.OverloadWaited + wait.String()
	if carriesRecord(req) {
		detail += checker.OverloadRecord
	}
	w.hist.Faults = append(w.hist.Faults, checker.Fault{At: w.loop.Now(), Kind: checker.Queued,
		Nodes: []string{from}, Peers: []string{to}, Detail: detail, Timer: timerOfRequest(req)})
}

// carriesRecord reports whether req carries a timer's record to a node:
// an internal PUT to /timers/<wire ID> (a replication, a pop notice, a
// forward to another site). A callback is a POST to its endpoint, a read
// a GET.
func carriesRecord(req *node.Request) bool {
	return req.Method == "PUT" && timerOfURL(req.URL) != 0
}

// timerOfRequest is the unique ID a request is about: named in its path
// (/timers/<wire ID>), or, for a callback, in its X-Chronos-Timer header.
func timerOfRequest(req *node.Request) uint64 {
	if id := timerOfURL(req.URL); id != 0 {
		return id
	}
	id, err := wire.ParseID(req.Header.Get(wire.HeaderTimerID))
	if err != nil {
		return 0
	}
	return id
}

// messageFault records one message the network's noise hit, naming the
// timer its request was about (internal requests name it in their path,
// callbacks in their X-Chronos-Timer header),
// so that the checker excuses only that timer, not the whole cluster.
func (w *world) messageFault(what string, kind checker.FaultKind, from, to string, req *node.Request, n int64) {
	f := checker.Fault{At: w.loop.Now(), Kind: kind, Nodes: []string{from}, Peers: []string{to}}
	switch kind {
	case checker.Reordered:
		f.Detail = "held=" + time.Duration(n).String()
	case checker.Late:
		f.Detail = what + "=" + time.Duration(n).String()
		if req != nil && carriesRecord(req) {
			// Its receiver rebuilds the start from it as it takes
			// it: the copy it brings starts late by its age.
			f.Detail += checker.OverloadRecord
		}
	}
	if req != nil {
		f.Timer = timerOfRequest(req)
		if seq := req.Header.Get(wire.HeaderSequenceNumber); seq != "" && timerOfURL(req.URL) == 0 {
			// A callback: the checker counts a lost one as its
			// replica's failed attempt of that pop.
			f.Detail = strings.TrimSpace(f.Detail + " " + checker.CallbackDetail + seq)
		}
		if !strings.Contains(req.URL, "://"+to+"/") {
			f.Detail = strings.TrimSpace(f.Detail + " " + checker.ReplyDetail)
		}
	}
	w.hist.Faults = append(w.hist.Faults, f)
}

// lose has the network lose one request about step s's timer on each of
// its links (netsim Lose). The timer is the one its label names when the
// step fires, or the ID its create chose; a step before an ID is known
// loses nothing and is an error of the scenario. The loss reaches the history as a
// lost message naming the timer, as random loss does (messageFault).
func (w *world) lose(s Step) {
	id := w.chosenID(s.Timer)
	if ref := w.timers[s.Timer]; ref != nil {
		id = ref.id
	}
	if id == 0 {
		w.scenarioError(s, fmt.Errorf("lose: the ID of timer %s is not known yet", s.Timer))
		return
	}
	match := func(req *node.Request) bool { return timerOfRequest(req) == id }
	for _, a := range w.hosts(s.Side) {
		for _, b := range w.hosts(s.Peers) {
			w.net.Lose(a, b, match, s.Count, w.loop.Now()+s.For)
		}
	}
}

// chosenID is the ID a create step of timer label chose, 0 if none did.
func (w *world) chosenID(label string) uint64 {
	for _, s := range w.plan.Steps {
		if s.Op == OpCreate && s.Timer == label && s.ID != 0 {
			return s.ID
		}
	}
	return 0
}

// timerOfURL is the unique ID named by a /timers/<wire ID> URL, 0 if none.
func timerOfURL(url string) uint64 {
	_, rest, ok := strings.Cut(url, "/timers/")
	if !ok {
		return 0
	}
	rest, _, _ = strings.Cut(rest, "?")
	id, _, err := wire.ParseWireID(rest)
	if err != nil {
		return 0
	}
	return id
}

func (w *world) fault(kind checker.FaultKind, nodes, peers []string, detail string) {
	w.hist.Faults = append(w.hist.Faults, checker.Fault{At: w.loop.Now(), Kind: kind, Nodes: nodes, Peers: peers, Detail: detail})
	w.tr.event("fault", string(kind), fmt.Sprint(nodes, peers), 0)
	if kind == checker.ClockJump || kind == checker.ClockDrift {
		// Every change of a clock is recorded here, as it is made.
		for _, n := range nodes {
			if m := w.machineAt(n); m != nil {
				w.retimeAhead(m)
			}
		}
	}
}

func (w *world) machine(name string) *machine {
	var i int
	if _, err := fmt.Sscanf(name, "n%d", &i); err != nil || i < 1 || i > len(w.machines) {
		panic(fmt.Sprintf("sim: %q is not a node", name))
	}
	return w.machines[i-1]
}

func (w *world) hosts(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		h, err := w.plan.host(n)
		if err != nil {
			panic(err)
		}
		out[i] = h
	}
	return out
}

// crash kills the node on the machine: its state, alarms and in-flight
// work are lost.
func (w *world) crash(m *machine) {
	if m.crashed || m.out {
		return
	}
	m.past.addNode(m.node)
	w.net.Crash(m.addr)
	m.clock.dropAlarms()
	if m.storage != nil {
		m.storage.log.Close()
		if m.disk.Full || m.disk.Lying {
			w.fault(checker.DiskOK, []string{m.addr}, nil, "")
		}
		m.disk.Crash()
		m.storage = nil
	}
	m.node, m.crashed, m.paused = nil, true, false
	w.fault(checker.Crash, []string{m.addr}, nil, "")
}

// restart boots a node where a crashed one was: empty, or with what its
// disk kept.
func (w *world) restart(m *machine) {
	if !m.crashed {
		return
	}
	w.boot(m)
	w.fault(checker.Restart, []string{m.addr}, nil, "")
}

func (w *world) resume(m *machine) {
	if !m.paused {
		return
	}
	m.paused = false
	w.fault(checker.Resume, []string{m.addr}, nil, "")
	w.net.Resume(m.addr)
}

func (w *world) partition(s Step) {
	side, peers := w.hosts(s.Side), w.hosts(s.Peers)
	for _, a := range side {
		for _, b := range peers {
			w.net.Block(a, b)
			if !s.OneWay {
				w.net.Block(b, a)
			}
		}
	}
	detail := "symmetric"
	if s.OneWay {
		detail = "one-way"
	}
	w.fault(checker.Partition, side, peers, detail)
}

// callbackMode makes a callback endpoint slow, failing or healthy. The
// fault's Nodes holds the endpoint's URI.
func (w *world) callbackMode(s Step) {
	var i int
	if _, err := fmt.Sscanf(s.Side[0], "c%d", &i); err != nil || i < 1 || i > len(w.callbacks) {
		panic(fmt.Sprintf("sim: %q is not a callback endpoint", s.Side[0]))
	}
	cb := w.callbacks[i-1]
	uri := []string{callbackURI(i)}
	switch s.Op {
	case OpSlow:
		cb.delay, cb.status = s.Delta, 0
		w.fault(checker.SlowCallback, uri, nil, "delay="+s.Delta.String())
	case OpFail:
		cb.delay, cb.status = 0, s.Status
		w.fault(checker.FailCallback, uri, nil, fmt.Sprintf("status=%d", s.Status))
	default:
		cb.delay, cb.status = 0, 0
		w.fault(checker.CallbackOK, uri, nil, "")
	}
}

// clockSyncLead is how long before the liveness phase the clocks are set
// right, so that the checker sees the correction as a fault of the safety
// phase (a clock fault has no end event: it counts until liveness).
const clockSyncLead = time.Millisecond

// syncClocks sets every clock right, as NTP would once the faults stop: no
// drift, no offset. Otherwise a clock left 2 s ahead would eat a backup's
// replica skew and duplicate pops forever after the faults ended.
func (w *world) syncClocks() {
	for _, m := range w.machines {
		if m.clock.Drift() != 0 {
			m.clock.SetDrift(0)
			w.fault(checker.ClockDrift, []string{m.addr}, nil, "0ppm")
		}
		if s := m.clock.Skew(); s != 0 {
			m.clock.Jump(-s)
			w.fault(checker.ClockJump, []string{m.addr}, nil, signed(-s))
		}
	}
}

// liveness ends the safety phase: every fault stops and the cluster heals.
func (w *world) liveness() {
	w.fault(checker.LivenessPhase, nil, nil, "")
	quiet := w.net.Options()
	quiet.LossRate, quiet.DuplicateRate, quiet.ReorderRate = 0, 0, 0
	if err := w.net.SetOptions(quiet); err != nil {
		panic(err)
	}
	w.net.HealAll()
	w.fault(checker.Heal, nil, nil, "")
	for _, m := range w.machines {
		w.resume(m)
		w.restart(m)
	}
	for _, cb := range w.callbacks {
		if cb.delay != 0 || cb.status != 0 {
			w.callbackMode(Step{Op: OpCallbackOK, Side: []string{fmt.Sprintf("c%d", cb.idx)}})
		}
	}
}
