package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBulkSendsKeepToTheWindow proves the flow control of bulk sends: at
// most a window of them is under way to a peer, the rest start in order
// as answers make room, a failure halves the window and a window's worth
// of answers widens it by one, a peer's sends leave another peer's alone,
// and the peer's state is dropped once nothing is left to it.
func TestBulkSendsKeepToTheWindow(t *testing.T) {
	n := &Node{}
	var started []int
	var finishes []func(bool)
	send := func(i int) func(func(bool)) {
		return func(finish func(bool)) {
			started = append(started, i)
			finishes = append(finishes, finish)
		}
	}
	for i := range 3 * bulkWindowStart {
		n.bulkSend("p", send(i))
	}
	require.Len(t, started, bulkWindowStart, "sends started at once")
	n.bulkSend("q", send(-1))
	assert.Len(t, started, bulkWindowStart+1, "another peer's send waits for nothing")
	finishes[bulkWindowStart](true)

	// A failure halves the window: the next answers start nothing while
	// as many as the window are under way.
	finishes[0](false)
	assert.Equal(t, bulkWindowStart/2, n.bulk["p"].window)
	for i := 1; i < bulkWindowStart/2; i++ {
		finishes[i](true)
	}
	assert.Len(t, started, bulkWindowStart+1, "sends started while as many as the narrowed window were under way")
	// The answer that makes room is the window's worth that widens it
	// by one: two sends start, the oldest held first.
	finishes[bulkWindowStart/2](true)
	assert.Equal(t, bulkWindowStart/2+1, n.bulk["p"].window)
	require.Len(t, started, bulkWindowStart+3, "sends started once the window had room")
	assert.Equal(t, []int{bulkWindowStart, bulkWindowStart + 1}, started[bulkWindowStart+1:])

	// Answer everything; each answer starts what it has room for, in
	// order, and the window grows by one a window's worth of answers.
	for next := bulkWindowStart/2 + 1; next < len(finishes); next++ {
		if next == bulkWindowStart {
			continue // q's, answered above
		}
		finishes[next](true)
	}
	require.Len(t, started, 3*bulkWindowStart+1, "every send started")
	for i, s := range started[bulkWindowStart+1:] {
		assert.Equal(t, bulkWindowStart+i, s, "sends start in the order they were made")
	}
	assert.Empty(t, n.bulk, "peers with nothing under way are forgotten")
	assert.Panics(t, func() { finishes[0](true) }, "a send finished twice")
}

// TestBulkWindowGrowsToItsBound proves that a peer that answers every send
// has its window widened by one a window's worth of answers, up to
// bulkWindowMax and no further.
func TestBulkWindowGrowsToItsBound(t *testing.T) {
	n := &Node{}
	var pending []func(bool)
	for range 200_000 {
		n.bulkSend("p", func(finish func(bool)) { pending = append(pending, finish) })
	}
	b := n.bulk["p"]
	widest := 0
	for len(pending) > 0 {
		f := pending[0]
		pending = pending[1:]
		f(true)
		widest = max(widest, b.window)
		assert.LessOrEqual(t, b.inFlight, b.window)
	}
	assert.Equal(t, bulkWindowMax, widest)
}
