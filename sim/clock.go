package sim

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/netsim"
	"github.com/chronos-timer/chronos/node"
)

// Epoch is the true wall time at the start of every run.
var Epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxDriftPPM bounds a clock's drift (1% fast or slow): far beyond real
// quartz, to stress the timing logic.
const MaxDriftPPM = 10_000

// Clock is one simulated machine's wall clock: an offset from true time that
// drifts at a rate and may jump. It implements node.Clock; an alarm fires at
// the true time the clock reaches its target, on the owning host's process
// (so never on a paused or dead incarnation). The clock belongs to the
// machine and survives restarts of the node on it.
type Clock struct {
	loop *netsim.Loop
	run  func(inc uint64, f func()) // runs f on an incarnation's process
	inc  uint64                     // current incarnation, set by the simulator

	anchorTrue  time.Duration // true time of the last re-anchoring
	anchorLocal time.Duration // clock reading (since Epoch) at anchorTrue
	driftPPM    int64

	nextID  uint64
	pending map[uint64]*alarm
	// minSkew and maxSkew are the lowest and highest offsets so far;
	// forward sums every forward movement of the offset (jumps ahead and
	// fast drift), closed segments only.
	minSkew, maxSkew time.Duration
	forward          time.Duration
	bootSkew         time.Duration // offset at creation
}

var _ node.Clock = (*Clock)(nil)

type alarm struct {
	c      *Clock
	id     uint64
	inc    uint64
	target time.Duration // clock reading at which it fires
	gen    uint64        // bumped on every reschedule; stale events ignore
	f      func()
	done   bool // fired or stopped
}

var _ node.Alarm = (*alarm)(nil)

func newClock(loop *netsim.Loop, offset time.Duration, driftPPM int64, run func(uint64, func())) *Clock {
	c := &Clock{loop: loop, run: run, anchorTrue: loop.Now(), anchorLocal: loop.Now() + offset,
		driftPPM: driftPPM, pending: map[uint64]*alarm{}, bootSkew: offset}
	c.noteSkew()
	return c
}

// local returns the clock reading (since Epoch) at true time t >= anchorTrue.
func (c *Clock) local(t time.Duration) time.Duration {
	e := t - c.anchorTrue
	return c.anchorLocal + e + time.Duration(int64(e)*c.driftPPM/1_000_000)
}

// trueAt returns the earliest true time >= now at which the clock reads at
// least target.
func (c *Clock) trueAt(target time.Duration) time.Duration {
	now := c.loop.Now()
	if target <= c.local(now) {
		return now
	}
	e := uint64(target - c.anchorLocal) // > 0: local(now) >= anchorLocal
	hi, lo := bits.Mul64(e, 1_000_000)
	den := uint64(1_000_000 + c.driftPPM)
	q, r := bits.Div64(hi, lo, den)
	if r != 0 {
		q++
	}
	t := c.anchorTrue + time.Duration(q)
	for c.local(t) < target { // integer rounding of local()
		t++
	}
	return max(t, now)
}

// Now returns the clock's reading.
func (c *Clock) Now() time.Time { return Epoch.Add(c.local(c.loop.Now())) }

// Skew returns the clock's offset from true time now.
func (c *Clock) Skew() time.Duration { return c.local(c.loop.Now()) - c.loop.Now() }

// SkewRange returns the lowest and highest offsets the clock has had so
// far (true time's offset, 0, included).
func (c *Clock) SkewRange() (lo, hi time.Duration) { c.noteSkew(); return c.minSkew, c.maxSkew }

func (c *Clock) noteSkew() {
	s := c.Skew()
	c.minSkew, c.maxSkew = min(c.minSkew, s), max(c.maxSkew, s)
}

// AfterFunc calls f once the clock has advanced by d.
func (c *Clock) AfterFunc(d time.Duration, f func()) node.Alarm {
	c.nextID++
	a := &alarm{c: c, id: c.nextID, inc: c.inc, target: c.local(c.loop.Now()) + max(d, 0), f: f}
	c.pending[a.id] = a
	c.schedule(a)
	return a
}

func (c *Clock) schedule(a *alarm) {
	a.gen++
	gen := a.gen
	c.loop.At(c.trueAt(a.target), func() {
		if a.done || a.gen != gen {
			return
		}
		a.done = true
		delete(c.pending, a.id)
		c.run(a.inc, a.f)
	})
}

// Stop cancels the alarm; it reports whether the alarm had not fired yet.
func (a *alarm) Stop() bool {
	if a.done {
		return false
	}
	a.done = true
	delete(a.c.pending, a.id)
	return true
}

// Jump moves the clock by delta (forward or back) and re-times its alarms.
func (c *Clock) Jump(delta time.Duration) {
	c.reanchor()
	c.anchorLocal += delta
	c.forward += max(delta, 0)
	c.noteSkew()
	c.reschedule()
}

// SetDrift changes the clock's rate to driftPPM parts per million fast
// (negative: slow) from now on.
func (c *Clock) SetDrift(driftPPM int64) {
	if driftPPM < -MaxDriftPPM || driftPPM > MaxDriftPPM {
		panic(fmt.Sprintf("sim: drift %d ppm beyond %d", driftPPM, MaxDriftPPM))
	}
	c.reanchor()
	c.driftPPM = driftPPM
	c.reschedule()
}

// Drift returns the clock's current drift in parts per million.
func (c *Clock) Drift() int64 { return c.driftPPM }

// Forward returns how far the clock's offset has moved forward in all, by
// jumps and fast drift. A node relaying a start time to another can make a
// pop early by its own forward movement plus the other's, so the sum over
// clocks bounds how early any pop can be.
func (c *Clock) Forward() time.Duration { return c.forward + c.segmentDrift() }

// segmentDrift is how far drift has moved the offset forward since the
// last re-anchoring (0 for a slow clock).
func (c *Clock) segmentDrift() time.Duration {
	now := c.loop.Now()
	return max(c.local(now)-c.anchorLocal-(now-c.anchorTrue), 0)
}

func (c *Clock) reanchor() {
	now := c.loop.Now()
	c.forward += c.segmentDrift()
	c.anchorLocal = c.local(now)
	c.anchorTrue = now
	c.noteSkew()
}

// reschedule re-times every pending alarm after a jump or drift change, in
// creation order so the trace stays deterministic.
func (c *Clock) reschedule() {
	ids := make([]uint64, 0, len(c.pending))
	for id := range c.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c.schedule(c.pending[id])
	}
}

// dropAlarms forgets every pending alarm: the node they belong to crashed.
func (c *Clock) dropAlarms() { clear(c.pending) }
