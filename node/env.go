package node

import (
	"strings"
	"time"
)

// Clock is the node's view of wall time. The driver owns it: the simulator
// gives each node a skewed, drifting virtual clock, production wraps a real
// one. Callbacks passed to AfterFunc must be delivered by the driver through
// the same serialization as every other call into the node, never
// concurrently with one.
type Clock interface {
	// Now returns the node's wall time.
	Now() time.Time
	// AfterFunc arranges for f to be called once, at or after d has passed
	// on this clock. The returned Alarm may be stopped; a stopped alarm may
	// still fire if it was already on its way, and the node tolerates that.
	AfterFunc(d time.Duration, f func()) Alarm
}

// Alarm is a pending Clock callback.
type Alarm interface {
	// Stop cancels the alarm. It reports whether the call stopped it before
	// it fired.
	Stop() bool
}

// Network carries the node's outbound requests: replication to peers and
// callbacks to clients. The driver performs the I/O and calls done exactly
// once, serialized like every other call into the node, with the response
// or with an error (connection refused, timeout, partition).
type Network interface {
	// Send sends req to the absolute URL in req.URL and calls done with the
	// outcome. timeout counts from when the request is written, not from
	// the call: a driver may first queue the request for a worker and a
	// connection, for at most a bound of its own (production: 2 s), and
	// fails it at once when its queue is full or that bound has passed. So
	// done comes no later than that queue bound plus timeout after the
	// call. Send never calls done before it returns.
	Send(req Request, timeout time.Duration, done func(Response, error))
}

// Header holds HTTP header fields. Keys are canonical (see CanonicalKey); use
// Get and Set rather than indexing, so both sides agree on spelling.
type Header map[string]string

// Get returns the value of the field key, or "".
func (h Header) Get(key string) string { return h[CanonicalKey(key)] }

// Set sets the field key to value.
func (h Header) Set(key, value string) { h[CanonicalKey(key)] = value }

// CanonicalKey returns the canonical spelling of a header field name, as
// net/http does: "x-sequence-number" becomes "X-Sequence-Number".
func CanonicalKey(key string) string {
	if isCanonical(key) {
		return key // as every key net/http hands over is: no copy
	}
	upper := true
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case !upper && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b.WriteByte(c)
		upper = c == '-'
	}
	return b.String()
}

// Request is an HTTP-shaped message. Inbound, URL is the request target
// ("/timers/0123?x=y"); outbound, it is absolute ("http://10.0.0.2:7253/timers/0123").
type Request struct {
	Method string
	URL    string
	Header Header
	Body   []byte
	// MaxWait, outbound, bounds how long the request may wait to be
	// written (for the driver's worker or connection) before the driver
	// gives up on it as shed: a pop another replica will make if this one
	// does not, or a message between nodes, is worth nothing later than
	// that. Zero leaves only the driver's own bound, for a pop no replica
	// after this one would make.
	MaxWait time.Duration
	// Late, on an outbound callback, is how long after its due time (this
	// replica's, skewed by its rank) the node sent it; 0 on any other
	// request. The driver adds the time the request then waits to be
	// written, for the lateness its metrics show.
	Late time.Duration
	// Remote, inbound, is the address the request came from, "ip:port"
	// (the connection's source; the sub-requests of a batch share their
	// batch's): a node without a cluster key takes internal requests
	// only from its members' addresses. "" when the driver does not
	// know it, which no member's address matches.
	Remote string
}

// Response is an HTTP-shaped reply.
type Response struct {
	Status int
	Header Header
	Body   []byte
}

// Well-known header names; the client API's own are in package wire.
const (
	HeaderContentType  = "Content-Type"
	HeaderContentRange = "Content-Range"
	HeaderRange        = "Range"
	// HeaderVersion carries the newer version a replica holds when it
	// refuses a client write with 409.
	HeaderVersion = "X-Chronos-Version"
	// HeaderSignature carries an internal request's HMAC under the
	// cluster key (see auth.go).
	HeaderSignature = "X-Chronos-Signature"
	// HeaderSent carries when an internal request was sent, on its
	// sender's clock, in Unix milliseconds (see auth.go).
	HeaderSent = "X-Chronos-Sent"
	// HeaderTo names the member an internal request is addressed to, as
	// the cluster knows it ("host:port"), or "site=<name>" for a timer
	// forwarded to a remote site.
	HeaderTo = "X-Chronos-To"
	// HeaderCollision marks a 409 answered because another timer is held
	// under the ID.
	HeaderCollision = "X-Chronos-Collision"
	// HeaderStartDelta answers a pop notice with the receiver's earlier
	// start time of the same definition, as a start-time-delta in ms.
	HeaderStartDelta = "X-Chronos-Start-Delta"
	// HeaderPopped answers a pop notice with how far the receiver's
	// record of the same definition has popped, as "<seq> <missed>" (see
	// TimerExtra.Missed): the sender learns which of the pops it missed
	// another replica made.
	HeaderPopped = "X-Chronos-Popped"
	// HeaderInstance carries the instance number and address of the
	// node that sent an internal request (see noteInstance).
	HeaderInstance = "X-Chronos-Instance"
	// HeaderInstanceClash, on the answer to an internal request, names
	// another node the receiver heard with the sender's instance number.
	HeaderInstanceClash = "X-Chronos-Instance-Clash"
	// HeaderHeld, on a 200 answer to a replication, says the receiver
	// holds the record's definition live as one of its replicas (under its
	// own view, "live": a node handing a copy off waits for it, handOff,
	// and a write counts it, vouches), that the tombstone it took
	// replaced a live copy ("buried": a delete stands on it, write), or,
	// to a live record, that it holds the same version ended ("ended":
	// a hand-off counts it, handOff).
	HeaderHeld = "X-Chronos-Held"
)

// isCanonical reports whether CanonicalKey would return key unchanged.
func isCanonical(key string) bool {
	upper := true
	for i := 0; i < len(key); i++ {
		c := key[i]
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			return false
		}
		upper = c == '-'
	}
	return true
}
