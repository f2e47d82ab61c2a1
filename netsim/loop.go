package netsim

import (
	"fmt"
	"time"
)

// MaxEvents bounds the events one run may process: a run that needs more is
// a livelock (a node re-arming an alarm for the past, say) and fails loudly.
const MaxEvents = 200_000_000

// Loop is the simulator's one event queue, ordered by (virtual time,
// insertion sequence). It runs on one goroutine and never reads real time.
// The simulator (sim) runs every run on one; the Network schedules its
// deliveries on it, and this package's tests drive it directly.
type Loop struct {
	now       time.Duration
	seq       uint64
	heap      []event
	processed uint64
}

type event struct {
	at  time.Duration
	seq uint64
	f   func()
}

// Now returns the current virtual time since the start of the run.
func (l *Loop) Now() time.Duration { return l.now }

// At schedules f to run at virtual time t (not before now).
func (l *Loop) At(t time.Duration, f func()) {
	if t < l.now {
		panic(fmt.Sprintf("netsim: event scheduled at %v, before now %v", t, l.now))
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
	for len(l.heap) > 0 && l.heap[0].at <= end {
		e := l.pop()
		l.now = e.at
		l.processed++
		if l.processed > MaxEvents {
			panic(fmt.Sprintf("netsim: more than %d events by %v: livelock", MaxEvents, l.now))
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
