package node

import "time"

// rng is the node's own randomness: splitmix64 seeded from Config.Seed,
// so that a simulated run stays a function of its seed. It decides
// nothing but jitter.
type rng struct{ state uint64 }

// next returns the next pseudo-random 64 bits.
func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	return mix64(r.state)
}

// mix64 is splitmix64's finalizer: a bijection of 64 bits that spreads
// every input bit over every output bit.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// jitter returns a duration drawn uniformly from [d/2, d]: peers that
// start waiting at the same moment (a reload reaching a whole cluster)
// do not all ask again at the same moment.
func (r *rng) jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return d - half + time.Duration(r.next()%uint64(half+1))
}

// retryPolicy is how a node asks again for something that failed: at
// most attempts tries in all, the waits between them doubling from base
// up to max, each drawn with jitter.
type retryPolicy struct {
	attempts  int
	base, max time.Duration
}

// again reports whether a try that was attempt number attempt (1-based)
// may be followed by another, and after how long.
func (p retryPolicy) again(attempt int, r *rng) (time.Duration, bool) {
	if attempt >= p.attempts {
		return 0, false
	}
	d := p.max
	if shift := attempt - 1; shift < 32 && p.base<<shift < p.max {
		d = p.base << shift
	}
	return r.jitter(d), true
}

// bulkRetry is how a bulk send (a resync's replication, tombstone or
// references message, a hand-off's push) that got no answer is sent
// again: maxResyncSends tries in all, the second after a wait drawn from
// [125 ms, 250 ms], the third from [250 ms, 500 ms]. The try it follows
// has already waited out its timeout, or was refused at once by a peer
// that is down; a peer that stalled for a moment gets a moment more, and
// the resends of a page that failed together (a window's worth, flow.go)
// do not all leave again at the same instant.
var bulkRetry = retryPolicy{attempts: maxResyncSends, base: 250 * time.Millisecond, max: time.Second}

// tryOutcome is how one try of a message sent under a retry policy
// ended (sendRetried).
type tryOutcome int

const (
	// tryDone: the peer answered as wanted, or as no try again would
	// change; the message is done.
	tryDone tryOutcome = iota
	// tryFailed: no answer, or not the one wanted; the message is sent
	// again while the policy allows and it is still wanted, and a last
	// failure (or a send given up on unsent, bulkGiveUp) ends it so.
	tryFailed
	// tryDropped: the message was not sent, or its answer no longer
	// matters (what it was sent for was superseded); it is done.
	tryDropped
)

// sendRetried sends one message to peer through peer's window of bulk
// sends (flow.go), and again after policy's wait while a try fails and
// again reports the message is still wanted (asked after the wait,
// before the retry is queued; it counts the retry's probe). try sends it
// once and calls its finish exactly once, with the try's outcome and
// whether the peer answered at all (for the window). end is called
// exactly once, with the outcome of the last try: tryFailed when the
// policy's tries ran out or a try was given up on unsent, tryDropped
// when again stopped a retry.
func (n *Node) sendRetried(peer string, policy retryPolicy, try func(finish func(out tryOutcome, answered bool)), again func() bool, end func(out tryOutcome)) {
	attempt := 0
	var send func()
	send = func() {
		attempt++
		n.bulkSend(peer, func(finish func(ok bool)) {
			try(func(out tryOutcome, answered bool) {
				finish(answered)
				if out != tryFailed {
					end(out)
					return
				}
				wait, ok := policy.again(attempt, &n.rand)
				if !ok {
					end(tryFailed)
					return
				}
				n.clock.AfterFunc(wait, func() {
					if !again() {
						end(tryDropped)
						return
					}
					send()
				})
			})
		}, func() { end(tryFailed) })
	}
	send()
}
