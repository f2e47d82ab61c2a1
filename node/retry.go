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
