package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bulkProbe drives a node's bulk sends by hand: each send it makes is
// recorded when it starts, with its finish.
type bulkProbe struct {
	n        *Node
	started  []int
	finishes []func(bool)
	answered map[int]bool
	dropped  []int
}

func (p *bulkProbe) send(peer string, i int) {
	p.n.bulkSend(peer, func(finish func(bool)) {
		p.started = append(p.started, i)
		p.finishes = append(p.finishes, finish)
	}, func() { p.dropped = append(p.dropped, i) })
}

// answer answers the k-th send started.
func (p *bulkProbe) answer(k int, ok bool) {
	p.answered[k] = true
	p.finishes[k](ok)
}

// TestBulkSendsKeepToTheWindow proves the flow control of bulk sends: at
// most a window of them is under way to a peer, the rest start in order
// as answers make room, each answer widens the window by one until a
// failure halves it, a peer's sends leave another peer's alone, and the
// peer's state is dropped once nothing is left to it.
func TestBulkSendsKeepToTheWindow(t *testing.T) {
	p := &bulkProbe{n: &Node{}, answered: map[int]bool{}}
	for i := range 4 * bulkWindowStart {
		p.send("p", i)
	}
	require.Len(t, p.started, bulkWindowStart, "sends started at once")
	p.send("q", -1)
	require.Len(t, p.started, bulkWindowStart+1, "another peer's send waits for nothing")
	p.answer(bulkWindowStart, true)
	assert.NotContains(t, p.n.bulk, "q", "a peer with nothing under way")

	// An answer while the window doubles makes room for two.
	p.answer(0, true)
	assert.Equal(t, bulkWindowStart+1, p.n.bulk["p"].window)
	require.Len(t, p.started, bulkWindowStart+3)
	assert.Equal(t, []int{bulkWindowStart, bulkWindowStart + 1}, p.started[bulkWindowStart+1:], "the oldest held sends start first")

	// A failure halves the window: answers start nothing while as many
	// as the window are under way, and then widen it by one a window.
	p.answer(1, false)
	b := p.n.bulk["p"]
	half := (bulkWindowStart + 1) / 2
	assert.Equal(t, half, b.window)
	for k := 2; k < half; k++ {
		p.answer(k, true)
	}
	require.Greater(t, b.inFlight, half)
	assert.Len(t, p.started, bulkWindowStart+3, "sends started while as many as the narrowed window were under way")
	assert.Equal(t, half, b.window, "the window after fewer than a window's worth of answers")

	// Answer everything; each answer starts what it has room for, in
	// order.
	for k := 0; k < len(p.finishes); k++ {
		if !p.answered[k] {
			p.answer(k, true)
		}
	}
	require.Len(t, p.started, 4*bulkWindowStart+1, "every send started")
	for i, s := range p.started[bulkWindowStart+1:] {
		assert.Equal(t, bulkWindowStart+i, s, "sends start in the order they were made")
	}
	assert.Empty(t, p.n.bulk, "peers with nothing under way are forgotten")
	assert.Panics(t, func() { p.finishes[0](true) }, "a send finished twice")
}

// TestBulkWindowStaysWithinItsBounds proves that a peer that answers every
// send has its window widened up to bulkWindowMax and no further, that an
// answer starts sends only into the room the window has, and that a peer
// that fails every send is sent one at a time before the sends held back
// for it are dropped.
func TestBulkWindowStaysWithinItsBounds(t *testing.T) {
	for _, ok := range []bool{true, false} {
		n := &Node{}
		var pending []func(bool)
		dropped := 0
		for range 50_000 {
			n.bulkSend("p", func(finish func(bool)) { pending = append(pending, finish) }, func() { dropped++ })
		}
		b := n.bulk["p"]
		widest, narrowest := 0, bulkWindowMax
		for len(pending) > 0 {
			f := pending[0]
			pending = pending[1:]
			before := b.inFlight
			f(ok)
			widest, narrowest = max(widest, b.window), min(narrowest, b.window)
			// An answer starts sends only into room the window has.
			require.LessOrEqual(t, b.inFlight, max(b.window, before-1))
		}
		assert.Empty(t, n.bulk, "every send answered")
		if ok {
			assert.Equal(t, bulkWindowMax, widest)
			assert.Zero(t, dropped)
		} else {
			assert.Equal(t, 1, narrowest)
			assert.Positive(t, dropped, "sends held back for a peer that failed every one")
		}
	}
}

// TestBulkSendsToAFailingPeerAreDropped proves that a peer that fails
// every send has its window halved round after round, and once it is
// down to one send and bulkGiveUp sends in a row have failed, the sends
// held back for it are dropped at once; once nothing is under way the
// peer starts afresh with a full window.
func TestBulkSendsToAFailingPeerAreDropped(t *testing.T) {
	const sends = 100_000
	p := &bulkProbe{n: &Node{}, answered: map[int]bool{}}
	for i := range sends {
		p.send("p", i)
	}
	rounds := 0
	for len(p.dropped) == 0 {
		require.Less(t, rounds, 100, "rounds of failures without giving up")
		rounds++
		for k, n := 0, len(p.finishes); k < n; k++ {
			if !p.answered[k] {
				p.answer(k, false)
			}
		}
	}
	assert.Equal(t, sends, len(p.started)+len(p.dropped), "every send started or dropped")
	assert.Less(t, len(p.started), 3*bulkWindowStart, "sends started to a peer that failed them all")
	assert.Empty(t, p.n.bulk, "the peer forgotten once nothing is under way")
	started := len(p.started)
	p.send("p", -2)
	assert.Len(t, p.started, started+1, "a send once the peer is forgotten")
}
