package client

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/chronos-timer/chronos/wire"
)

// ErrInvalid is wrapped by the errors of arguments the client refuses
// before sending anything: a timer definition it cannot encode as given
// (Timer.Validate), a malformed timer ID, a malformed node address.
var ErrInvalid = wire.ErrInvalid

// MaxTiming is the longest interval or repeat-for a node accepts.
const MaxTiming = wire.MaxTiming

// Timer is a timer definition as a client writes it (docs/api.md): pop
// every Interval, for RepeatFor, by POSTing Opaque to URI. It is the
// API's own type, so that a client and a node read a definition alike;
// its JSON is the body of a create or update, and Validate refuses what
// the API would refuse or the encoding would alter.
type Timer = wire.Timer

// Tag is a statistics tag: the timer counts Count times under Type.
type Tag = wire.Tag

// ID is a timer ID as the API shows it: 32 hex digits, the timer's unique
// ID and then a bloom filter of its replicas. The bloom filter changes
// when the replicas do, so keep the ID the latest Create or Update
// returned: an update or delete reaches the replicas it names as well as
// today's.
type ID string

// ParseID checks that s is a timer ID, and returns it in lower case.
func ParseID(s string) (ID, error) {
	if _, _, err := wire.ParseWireID(s); err != nil {
		return "", fmt.Errorf("%w: timer ID %q is not 32 hex digits", ErrInvalid, s)
	}
	return ID(strings.ToLower(s)), nil
}

// Unique returns the first half of the ID, 16 hex digits: what a pop's
// X-Chronos-Timer header names, the same for the timer's whole life.
func (id ID) Unique() string {
	if len(id) < 16 {
		return string(id)
	}
	return strings.ToLower(string(id[:16]))
}

// newID chooses the ID of a timer this client creates (docs/api.md,
// chosen IDs): 63 random bits under a set top bit, so that it can never
// read as an ID a node issues (their top bits count milliseconds since
// 2020, which reach the top bit in 2089), and an empty bloom filter. An
// empty filter names no node, so the create goes to the timer's replicas
// alone, and its answer's Location gives the real filter. Two clients
// choose the same ID with probability about n²/2⁶⁴ for n timers.
func newID() (ID, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("client: choose a timer ID: %w", err)
	}
	return ID(wire.FormatWireID(binary.BigEndian.Uint64(b[:])|1<<63, 0)), nil
}
