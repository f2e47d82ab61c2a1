package netsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// Errors a sender sees, as a real HTTP client would.
var (
	// ErrRefused: the host is down or unknown (connection refused).
	ErrRefused = errors.New("netsim: connection refused")
	// ErrTimeout: no response within the timeout (lost, partitioned,
	// paused or slow peer).
	ErrTimeout = errors.New("netsim: timeout")
	// ErrShed: the sender's modelled CPU would have made the request wait
	// longer than its MaxWait before writing it, so it was given up, as
	// the production client sheds it.
	ErrShed = errors.New("netsim: shed under load")
	// ErrBadURL: the request URL is not absolute http(s).
	ErrBadURL = errors.New("netsim: request URL is not absolute")
)

// Scheduler is the simulator's event queue as the network needs it: the
// current virtual time and a way to run f at a later virtual time. Events
// at equal times run in the order they were scheduled.
type Scheduler interface {
	Now() time.Duration
	At(t time.Duration, f func())
}

// Handler serves a request that arrived at a host from the host named from,
// which sent it at sent (true time: when it left the sender, after any
// wait for the sender's CPU; a replay's is when it was sent again). A
// request a host serves late (it was paused, its CPU busy, the link held
// it) is older than the network's delay says. It must call reply exactly
// once, now or later.
type Handler func(from string, sent time.Duration, req node.Request, reply func(node.Response))

// Tracer receives every network decision, for the simulator's trace hash and
// its printed trace. what is a short fixed word ("send", "drop", ...).
type Tracer func(what, from, to string, req *node.Request, detail int64)

// State is a host's process state.
type State int

// Host states.
const (
	// Down: crashed or never started; connections are refused.
	Down State = iota
	// Up: serving.
	Up
	// Paused: the process is stopped (SIGSTOP); the kernel accepts
	// connections and buffers requests, nothing is answered until resumed.
	Paused
)

// Stats counts what the network did. Queued counts work that waited for a
// busy host's modelled CPU, and QueuedFor sums the waits; Shed counts
// sends given up because they would have waited longer than their
// MaxWait.
type Stats struct {
	Sent, Delivered, Lost, Duplicated, Reordered, Blocked, Refused, TimedOut, Clogged uint64
	Queued, Shed                                                                      uint64
	QueuedFor                                                                         time.Duration
}

type link struct{ from, to string }

type host struct {
	name    string
	noisy   bool
	state   State
	inc     uint64 // incarnation: bumped by every Listen
	handler Handler
	queue   []func() // work held while paused
	// free holds, per modelled worker, when it is next idle (see cpu).
	free []time.Duration
}

// Network is the simulated network: the factory of endpoints and the switch
// that carries their messages.
type Network struct {
	opts    Options
	sched   Scheduler
	rng     *rand.Rand
	trace   Tracer
	hosts   map[string]*host
	blocked map[link]bool
	clogged map[link]time.Duration // until
	stats   Stats
	// holding are the held links, held what they keep until the heal,
	// captured the requests kept for replay (late.go).
	holding  map[link]bool
	held     []heldMsg
	captured map[link][]captured
	// lose are the single losses waiting for their request (lose.go).
	lose []loseRule
}

// New returns an empty network drawing every decision from rng (the
// simulator's network stream) and scheduling deliveries on sched.
func New(opts Options, sched Scheduler, rng *rand.Rand) (*Network, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if sched == nil || rng == nil {
		return nil, fmt.Errorf("netsim: nil scheduler or random source")
	}
	return &Network{
		opts:    opts,
		sched:   sched,
		rng:     rng,
		trace:   func(string, string, string, *node.Request, int64) {},
		hosts:   map[string]*host{},
		blocked: map[link]bool{},
		clogged: map[link]time.Duration{},
	}, nil
}

// SetTracer installs t to observe every network decision.
func (n *Network) SetTracer(t Tracer) { n.trace = t }

// SetOptions changes the knobs from now on (the simulator quiets the
// network for its liveness phase). Messages in flight keep their fate.
func (n *Network) SetOptions(o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	n.opts = o
	n.trace("options", "", "", nil, 0)
	return nil
}

// Options returns the network's options.
func (n *Network) Options() Options { return n.opts }

// Stats returns the counters so far.
func (n *Network) Stats() Stats { return n.stats }

// Listen starts a new incarnation of the named host, serving inbound
// requests with h (nil: a client that only sends; inbound connections are
// refused), and returns its endpoint. Noisy hosts suffer random loss,
// duplication and reordering on links to other noisy hosts. Work of any
// earlier incarnation still in flight is dropped.
func (n *Network) Listen(name string, h Handler, noisy bool) *Endpoint {
	hs := n.hosts[name]
	if hs == nil {
		hs = &host{name: name}
		n.hosts[name] = hs
	}
	hs.inc++
	hs.state, hs.handler, hs.noisy, hs.queue, hs.free = Up, h, noisy, nil, nil
	n.trace("listen", name, name, nil, int64(hs.inc))
	return &Endpoint{net: n, host: hs, inc: hs.inc}
}

// Crash takes the host down: its state and in-flight work are gone and new
// connections are refused until the next Listen.
func (n *Network) Crash(name string) {
	hs := n.mustHost(name)
	hs.state, hs.queue = Down, nil
	n.trace("crash", name, name, nil, int64(hs.inc))
}

// Pause stops the host's process: requests and completions are buffered.
func (n *Network) Pause(name string) {
	hs := n.mustHost(name)
	if hs.state == Up {
		hs.state = Paused
	}
	n.trace("pause", name, name, nil, int64(len(hs.queue)))
}

// Resume continues a paused host, running its buffered work in order.
func (n *Network) Resume(name string) {
	hs := n.mustHost(name)
	if hs.state != Paused {
		return
	}
	hs.state = Up
	q := hs.queue
	hs.queue = nil
	n.trace("resume", name, name, nil, int64(len(q)))
	for _, f := range q {
		if hs.state != Up {
			// The work itself paused or crashed the host: keep the rest.
			hs.queue = append(hs.queue, f)
			continue
		}
		f()
	}
}

// State returns the host's state (Down for an unknown host).
func (n *Network) State(name string) State {
	if hs := n.hosts[name]; hs != nil {
		return hs.state
	}
	return Down
}

// Block drops every message sent from one host to another until Unblock or
// HealAll: one half of a partition.
func (n *Network) Block(from, to string) {
	n.blocked[link{from, to}] = true
	n.trace("block", from, to, nil, 0)
}

// Unblock restores the link from one host to another.
func (n *Network) Unblock(from, to string) {
	delete(n.blocked, link{from, to})
	n.trace("unblock", from, to, nil, 0)
}

// Clog holds every message sent from one host to another until the virtual
// time until, then lets them through in order (FoundationDB's clogging).
func (n *Network) Clog(from, to string, until time.Duration) {
	if until > n.clogged[link{from, to}] {
		n.clogged[link{from, to}] = until
	}
	n.trace("clog", from, to, nil, int64(until))
}

// HealAll removes every partition, clog and hold, and delivers what the
// held links kept.
func (n *Network) HealAll() {
	clear(n.blocked)
	clear(n.clogged)
	n.trace("heal", "", "", nil, 0)
	n.release()
}

// Run runs f on the given incarnation of a host, as the host's process: at
// once if it is up, when it resumes if it is paused, never if that
// incarnation is gone. The simulator delivers alarms through it.
func (n *Network) Run(name string, inc uint64, f func()) {
	hs := n.mustHost(name)
	if hs.inc != inc || hs.state == Down {
		return
	}
	if hs.state == Paused {
		if len(hs.queue) >= MaxPausedQueue {
			hs.queue = hs.queue[1:]
		}
		hs.queue = append(hs.queue, f)
		return
	}
	f()
}

// cpu models the host's CPU: it returns when work of the given cost that
// arrives now is done, on the first worker to be free, first come first
// served; and false when the host has no modelled CPU (the work is free).
func (n *Network) cpu(hs *host) (done time.Duration, modelled bool) {
	workers := n.opts.EndpointWorkers
	if hs.noisy {
		workers = n.opts.NodeWorkers
	}
	return n.busy(hs, workers, n.serviceTime(hs))
}

// serviceTime is what serving one request costs hs's modelled CPU.
func (n *Network) serviceTime(hs *host) time.Duration {
	if hs.noisy {
		return n.opts.NodeServiceTime
	}
	return n.opts.EndpointServiceTime
}

// sendCPU is cpu for a request the host sends, which waits for a worker
// at most maxWait (0: no bound): past it the request is shed, uses no
// worker, and shed is true.
func (n *Network) sendCPU(hs *host, maxWait time.Duration) (done time.Duration, modelled, shed bool) {
	if !hs.noisy || n.opts.NodeWorkers == 0 {
		return 0, false, false
	}
	if w := n.freeWorker(hs, n.opts.NodeWorkers); maxWait > 0 && hs.free[w]-n.sched.Now() > maxWait {
		n.stats.Shed++
		return 0, true, true
	}
	done, _ = n.busy(hs, n.opts.NodeWorkers, n.opts.NodeSendTime)
	return done, true, false
}

// freeWorker returns the modelled worker of hs that is free first.
func (n *Network) freeWorker(hs *host, workers int) int {
	if len(hs.free) != workers {
		hs.free = make([]time.Duration, workers)
	}
	w := 0
	for i, f := range hs.free {
		if f < hs.free[w] {
			w = i
		}
	}
	return w
}

func (n *Network) busy(hs *host, workers int, cost time.Duration) (time.Duration, bool) {
	if workers == 0 {
		return 0, false
	}
	w := n.freeWorker(hs, workers)
	now := n.sched.Now()
	start := max(now, hs.free[w])
	if start > now {
		n.stats.Queued++
		n.stats.QueuedFor += start - now
	}
	hs.free[w] = start + cost
	return start + cost, true
}

func (n *Network) mustHost(name string) *host {
	hs := n.hosts[name]
	if hs == nil {
		panic(fmt.Sprintf("netsim: unknown host %q", name))
	}
	return hs
}

// hostOf returns the host part of an absolute http(s) URL and the request
// target (path and query) to deliver.
func hostOf(url string) (host, target string, ok bool) {
	rest, found := strings.CutPrefix(url, "http://")
	if !found {
		if rest, found = strings.CutPrefix(url, "https://"); !found {
			return "", "", false
		}
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return rest, "/", rest != ""
	}
	return rest[:i], rest[i:], i > 0
}
