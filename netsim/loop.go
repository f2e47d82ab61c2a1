package netsim

import (
	"cmp"
	"fmt"
	"time"
)

// A run's limits: a run past one of them is a bug (a livelock, a message
// storm) and fails loudly, in seconds and bounded memory, instead of
// taking the machine down.
const (
	// MaxEvents bounds the events one run may process: ten times the
	// largest generated run of seeds 1..1000 (470,593 events). A storm
	// that makes virtual progress (two replicas handing each other a
	// changed copy a transit time apart, for ever) passes the other two
	// limits and costs 20 to 50 µs an event: stopped here, in a minute
	// or two, not hours.
	MaxEvents = 5_000_000
	// MaxEventsPerInstant bounds the events run at one virtual instant:
	// a run that makes no virtual progress (a node re-arming an alarm
	// for the past, two nodes answering each other at once for ever)
	// reaches it in about a second of real time.
	MaxEventsPerInstant = 1_000_000
	// MaxPending bounds the events queued at once, and so the memory a
	// run holds: a message storm reaches it long before the machine's
	// memory (about 1 KB an event, with its message).
	MaxPending = 4_000_000
)

// Loop is the simulator's one event queue, ordered by (virtual time,
// insertion sequence). It runs on one goroutine and never reads real time.
// The simulator (sim) runs every run on one; the Network schedules its
// deliveries on it, and this package's tests drive it directly.
type Loop struct {
	// Limits overrides the run's limits (zero fields: the package's).
	Limits    Limits
	now       time.Duration
	seq       uint64
	heap      []event
	processed uint64
	// instant counts the events run at now.
	instant uint64
}

type event struct {
	at  time.Duration
	seq uint64
	f   func()
}

// Limits are a loop's bounds; a zero field is the package's constant.
type Limits struct {
	Events, EventsPerInstant uint64
	Pending                  int
}

func (l *Loop) limits() Limits {
	lim := l.Limits
	lim.Events = cmp.Or(lim.Events, MaxEvents)
	lim.EventsPerInstant = cmp.Or(lim.EventsPerInstant, MaxEventsPerInstant)
	lim.Pending = cmp.Or(lim.Pending, MaxPending)
	return lim
}

// Now returns the current virtual time since the start of the run.
func (l *Loop) Now() time.Duration { return l.now }

// At schedules f to run at virtual time t (not before now).
func (l *Loop) At(t time.Duration, f func()) {
	if t < l.now {
		panic(fmt.Sprintf("netsim: event scheduled at %v, before now %v", t, l.now))
	}
	if len(l.heap) >= l.limits().Pending {
		panic(fmt.Sprintf("netsim: %d events queued at %v: a message storm", len(l.heap), l.now))
	}
	l.seq++
	l.heap = append(l.heap, event{at: t, seq: l.seq, f: f})
	l.up(len(l.heap) - 1)
}

// After schedules f to run d from now.
func (l *Loop) After(d time.Duration, f func()) { l.At(l.now+max(d, 0), f) }

// Pending returns the number of scheduled events.
func (l *Loop) Pending() int { return len(l.heap) }

// Processed returns the number of events run so far.
func (l *Loop) Processed() uint64 { return l.processed }

// RunUntil runs events in order until the queue is empty or the next event
// is after end, then sets the time to end.
func (l *Loop) RunUntil(end time.Duration) {
	lim := l.limits()
	for len(l.heap) > 0 && l.heap[0].at <= end {
		e := l.pop()
		if e.at != l.now {
			l.instant = 0
		}
		l.now = e.at
		l.processed++
		l.instant++
		switch {
		case l.processed > lim.Events:
			panic(fmt.Sprintf("netsim: more than %d events by %v: livelock", lim.Events, l.now))
		case l.instant > lim.EventsPerInstant:
			panic(fmt.Sprintf("netsim: more than %d events at %v with no virtual progress: livelock", lim.EventsPerInstant, l.now))
		}
		e.f()
	}
	l.now = max(l.now, end)
}

// Run runs every event, in order, until the queue is empty.
func (l *Loop) Run() {
	for len(l.heap) > 0 {
		l.RunUntil(l.heap[0].at)
	}
}

func less(a, b *event) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

func (l *Loop) up(i int) {
	h := l.heap
	for i > 0 {
		p := (i - 1) / 2
		if !less(&h[i], &h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (l *Loop) pop() event {
	h := l.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = event{}
	h = h[:last]
	l.heap = h
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && less(&h[c+1], &h[c]) {
			c++
		}
		if !less(&h[c], &h[i]) {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	return top
}
