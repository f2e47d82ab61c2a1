package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// retried runs one sendRetried on n to peer "p" whose tries end as outs
// says (the last outcome repeats), with again answering from wanted
// (nil: always), and returns when each try started and how it ended.
func retried(t *testing.T, n *Node, c *manualClock, outs []tryOutcome, wanted func(try int) bool) (starts []time.Duration, ends []tryOutcome) {
	t.Helper()
	n.sendRetried("p", bulkRetry, func(finish func(tryOutcome, bool)) {
		k := min(len(starts), len(outs)-1)
		starts = append(starts, c.now.Sub(epoch))
		finish(outs[k], outs[k] != tryFailed)
	}, func() bool { return wanted == nil || wanted(len(starts)) }, func(out tryOutcome) { ends = append(ends, out) })
	c.advance(time.Minute)
	return starts, ends
}

// TestSendRetriedWaitsAJitteredBackoff proves the one retry policy of a
// bulk send: a try that fails is sent again only after a wait drawn from
// [d/2, d], d doubling from bulkRetry.base, at most bulkRetry.attempts
// tries in all, and end is told once how the last ended; the waits are
// drawn from the node's own seeded randomness, so two nodes seeded apart
// do not resend in step.
func TestSendRetriedWaitsAJitteredBackoff(t *testing.T) {
	var waits [][]time.Duration
	for _, seed := range []uint64{1, 2} {
		c := &manualClock{now: epoch}
		n := &Node{clock: c, rand: rng{state: seed}}
		starts, ends := retried(t, n, c, []tryOutcome{tryFailed}, nil)
		require.Len(t, starts, bulkRetry.attempts, "tries of a send that never got an answer")
		assert.Equal(t, []tryOutcome{tryFailed}, ends)
		var w []time.Duration
		d := bulkRetry.base
		for k := 1; k < len(starts); k++ {
			wait := starts[k] - starts[k-1]
			assert.GreaterOrEqual(t, wait, d/2, "retry %d sent before its wait", k)
			assert.LessOrEqual(t, wait, d, "retry %d", k)
			w = append(w, wait)
			d = min(2*d, bulkRetry.max)
		}
		waits = append(waits, w)
		assert.Empty(t, n.bulk, "nothing left under way")
	}
	assert.NotEqual(t, waits[0], waits[1], "the waits of two nodes seeded apart")
}

// TestSendRetriedEndsOnceWithTheLastOutcome proves that a send answered
// on a retry ends done, one no longer wanted when its retry is due ends
// dropped without another try, and one the window gave up on unsent ends
// failed: each time end is told exactly once.
func TestSendRetriedEndsOnceWithTheLastOutcome(t *testing.T) {
	c := &manualClock{now: epoch}
	n := &Node{clock: c, rand: rng{state: 7}}
	starts, ends := retried(t, n, c, []tryOutcome{tryFailed, tryDone}, nil)
	assert.Len(t, starts, 2)
	assert.Equal(t, []tryOutcome{tryDone}, ends)

	starts, ends = retried(t, n, c, []tryOutcome{tryFailed}, func(int) bool { return false })
	assert.Len(t, starts, 1, "a retry no longer wanted is not sent")
	assert.Equal(t, []tryOutcome{tryDropped}, ends)

	starts, ends = retried(t, n, c, []tryOutcome{tryDropped}, nil)
	assert.Len(t, starts, 1)
	assert.Equal(t, []tryOutcome{tryDropped}, ends)

	// A peer given up on (bulkGiveUp): the send is dropped unsent.
	n.bulk = map[string]*bulkPeer{"p": {window: 1, failing: bulkGiveUp, inFlight: 1}}
	starts, ends = retried(t, n, c, []tryOutcome{tryDone}, nil)
	assert.Empty(t, starts)
	assert.Equal(t, []tryOutcome{tryFailed}, ends)
}
