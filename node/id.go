package node

import "github.com/chronos-timer/chronos/wire"

// Unique IDs (docs/design.md 4.2) are milliseconds since idEpochMs, the issuing
// node's instance number and a per-millisecond sequence:
//
//	| 42 bits ms since 2020-01-01 | 10 bits instance | 12 bits sequence |
//
// 42 bits of milliseconds last about 139 years; 12 bits give 4096 IDs per
// millisecond per node.
const (
	seqBits      = 12
	instanceBits = 10
	timeBits     = 64 - seqBits - instanceBits
	idEpochMs    = 1577836800000 // 2020-01-01T00:00:00Z
	maxIDMs      = 1<<timeBits - 1
)

// errBadWireID is the reason a request with a malformed timer ID is
// refused with.
const errBadWireID = "the timer ID must be 32 hex digits"

// idGen issues unique IDs that never repeat and never go backwards, even
// when the clock does: a backward step reuses the last millisecond, and a
// full millisecond borrows the next one.
//
// It is also the node's version clock, a hybrid logical clock: observe
// moves it past an ID or version seen from outside, so that a version
// issued afterwards orders after it. What it observes is bounded by the
// node's own clock plus leadMs, as a hybrid logical clock bounds a remote
// timestamp, so no ID a client chooses and no version a peer sends can drag
// the generator towards the end of its range.
type idGen struct {
	instance uint64
	leadMs   int64
	// lastMs is the time field of the last ID issued, -1 before the first.
	lastMs int64
	seq    uint64
}

func newIDGen(instance uint64, leadMs int64) idGen {
	return idGen{instance: instance, leadMs: leadMs, lastMs: -1}
}

// idMs returns the time field of an ID: milliseconds since idEpochMs.
func idMs(id uint64) int64 { return int64(id >> (instanceBits + seqBits)) }

// instanceOf returns the instance field of an ID: the number of the node
// that issued it.
func instanceOf(id uint64) uint64 { return id >> seqBits & (1<<instanceBits - 1) }

// next returns a fresh ID for wall time nowMs. ok is false only when the
// ID space is used up: the clock (or the last ID) is at its end, in 2159.
func (g *idGen) next(nowMs int64) (id uint64, ok bool) {
	ms := min(max(nowMs-idEpochMs, 0), maxIDMs)
	switch {
	case ms > g.lastMs:
		g.lastMs, g.seq = ms, 0
	case g.seq+1 < 1<<seqBits:
		g.seq++
	case g.lastMs < maxIDMs:
		g.lastMs, g.seq = g.lastMs+1, 0
	default:
		return 0, false
	}
	return uint64(g.lastMs)<<(instanceBits+seqBits) | g.instance<<seqBits | g.seq, true
}

// observe makes every later ID greater than id, as far as the node's clock
// (nowMs) plus the lead allows: past that bound it moves the generator to
// the bound and no further.
func (g *idGen) observe(id uint64, nowMs int64) {
	ms := min(idMs(id), g.bound(nowMs))
	if ms > g.lastMs {
		g.lastMs, g.seq = ms, 1<<seqBits-1
	}
}

// observeID orders later versions after the creation of timer id, whose
// version is its ID when a node issued it. An ID dated beyond the bound
// is no node's (a client chose it: its create was versioned by the node
// that took it), so it is not observed at all: moving the generator to the
// bound on its account would date this node's versions a lead ahead of
// its peers', and a later write through a peer would lose to an earlier
// one through this node.
func (g *idGen) observeID(id uint64, nowMs int64) {
	if idMs(id) <= g.bound(nowMs) {
		g.observe(id, nowMs)
	}
}

// ahead reports whether a version a peer sent is dated further ahead of
// this node's clock than any honest peer's can be: twice the lead, since a
// peer's generator may itself be a lead ahead of a clock that runs ahead
// of this one (by less than the lead, the clock skew the bound assumes).
func (g *idGen) ahead(version uint64, nowMs int64) bool {
	return idMs(version) > g.bound(nowMs)+g.leadMs
}

// behind reports whether the node's clock (nowMs) is further behind the
// last ID issued than the lead: it was stepped back, or the node restarted
// on a clock behind the one it issued IDs by. An ID or version issued now
// would be dated beyond what a peer may take (ahead), so none is issued
// until the clock catches up (Node.nextID).
func (g *idGen) behind(nowMs int64) bool { return g.lastMs > g.bound(nowMs) }

func (g *idGen) bound(nowMs int64) int64 {
	return min(max(nowMs-idEpochMs, 0)+g.leadMs, maxIDMs)
}

// skip makes the next ID at least n sequence numbers later than it would
// have been, borrowing later milliseconds as next does.
func (g *idGen) skip(n uint64) {
	if g.lastMs < 0 {
		return
	}
	seq := g.seq + n
	ms := g.lastMs + int64(seq>>seqBits)
	if ms > maxIDMs {
		g.lastMs, g.seq = maxIDMs, 1<<seqBits-1
		return
	}
	g.lastMs, g.seq = ms, seq&(1<<seqBits-1)
}

// renumber switches to another instance number. Its IDs start past the
// bound, beyond any ID the number's previous holder can have issued while
// its clock was within the lead of this one.
func (g *idGen) renumber(instance uint64, nowMs int64) {
	g.instance = instance
	g.lastMs, g.seq = max(g.lastMs, g.bound(nowMs)), 1<<seqBits-1
}

// IDTime returns the wall time in Unix milliseconds an ID was issued at.
func IDTime(id uint64) int64 {
	return int64(id>>(instanceBits+seqBits)) + idEpochMs
}

// wireID is t's ID as the API shows it (wire.FormatWireID), with the bloom
// filter of its replicas: the form log lines give, which an operator can
// match with a client's.
func (n *Node) wireID(t *Timer) string {
	var bloom uint64
	if t.Placement() != nil {
		bloom = n.ring.Bloom(t.Placement().Replicas)
	}
	return wire.FormatWireID(t.ID, bloom)
}
