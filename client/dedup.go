package client

import (
	"context"
	"time"
)

// popKey identifies a pop: the timer, the sequence number and a
// fingerprint of the opaque data. Every copy of one pop carries the same
// three. The fingerprint is there because an update starts the sequence
// numbers over: pop 1 of a new definition is not a duplicate of pop 1 of
// the old one, and when the update changed the opaque data the key tells
// them apart.
type popKey struct {
	timer  uint64
	seq    uint64
	opaque uint64
}

// seenEntry is a remembered pop, in the order they were delivered.
type seenEntry struct {
	key popKey
	at  time.Time
	gen uint64
}

// memory is the handler's memory of delivered pops: those delivered
// within window, at most limit of them, the oldest forgotten first. It
// also tracks the pops being delivered right now, so that a copy arriving
// meanwhile waits for the outcome of the first instead of being delivered
// beside it. Its owner holds a lock around every call.
type memory struct {
	window time.Duration
	limit  int
	// last maps a remembered pop to its entry in order, by generation.
	last  map[popKey]seenEntry
	order []seenEntry // a queue: order[head:] are live
	head  int
	gen   uint64
	// busy maps a pop being delivered to a channel closed when it is
	// done.
	busy map[popKey]chan struct{}
}

func newMemory(window time.Duration, limit int) *memory {
	return &memory{window: window, limit: limit, last: map[popKey]seenEntry{}, busy: map[popKey]chan struct{}{}}
}

// seen reports whether k was delivered within the window before now.
func (m *memory) seen(k popKey, now time.Time) bool {
	e, ok := m.last[k]
	return ok && now.Sub(e.at) < m.window
}

// remember records k as delivered at now, forgetting first what fell out
// of the window and, at the limit, the oldest pop.
func (m *memory) remember(k popKey, now time.Time) {
	for m.len() > 0 && (m.len() >= m.limit || now.Sub(m.order[m.head].at) >= m.window) {
		m.forgetOldest()
	}
	m.gen++
	e := seenEntry{key: k, at: now, gen: m.gen}
	m.order = append(m.order, e)
	m.last[k] = e
}

// forgetTimer forgets every pop of timer.
func (m *memory) forgetTimer(timer uint64) {
	for k := range m.last {
		if k.timer == timer {
			delete(m.last, k)
		}
	}
	// Their entries in order are skipped when they reach the head: a
	// forgotten key no longer matches by generation.
}

func (m *memory) len() int { return len(m.order) - m.head }

func (m *memory) forgetOldest() {
	e := m.order[m.head]
	m.order[m.head] = seenEntry{}
	m.head++
	if cur, ok := m.last[e.key]; ok && cur.gen == e.gen {
		delete(m.last, e.key)
	}
	// Compact once the dead half is large, so the queue's array stays
	// within twice the live entries.
	if m.head > 1024 && m.head*2 > len(m.order) {
		m.order = append(m.order[:0:0], m.order[m.head:]...)
		m.head = 0
	}
}

// claim marks k as being delivered, or returns the channel of the
// delivery of k already under way.
func (m *memory) claim(k popKey) (wait <-chan struct{}, ok bool) {
	if ch, busy := m.busy[k]; busy {
		return ch, false
	}
	m.busy[k] = make(chan struct{})
	return nil, true
}

// release ends the delivery of k, remembering it at now if it succeeded.
func (m *memory) release(k popKey, delivered bool, now time.Time) {
	if delivered {
		m.remember(k, now)
	}
	close(m.busy[k])
	delete(m.busy, k)
}

// waitFor waits until ch is closed or ctx is done.
func waitFor(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
