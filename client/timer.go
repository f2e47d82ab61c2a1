package client

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chronos-timer/chronos/node"
)

// ErrInvalid is wrapped by the errors of arguments the client refuses
// before sending anything: a timer definition it cannot encode as given,
// a malformed timer ID, a malformed node address.
var ErrInvalid = errors.New("client: invalid argument")

// MaxTiming is the longest interval or repeat-for a node accepts.
const MaxTiming = node.MaxTimingSeconds * time.Second

// Timer is a timer definition as a client writes it (docs/api.md): pop
// every Interval, for RepeatFor, by POSTing Opaque to URI.
//
// The wire format counts whole seconds, so Interval and RepeatFor must be
// whole seconds; Validate refuses anything the encoding would alter
// rather than round it. The node is the judge of everything else (the
// URI's form, its allow-list) and answers a 400 with the reason.
type Timer struct {
	// Interval is the time between pops, and until the first. 0 pops once,
	// at once.
	Interval time.Duration
	// RepeatFor is how long the timer keeps popping: pops fall at every
	// Interval up to RepeatFor. 0, like RepeatFor equal to Interval, is a
	// single pop.
	RepeatFor time.Duration
	// URI is the absolute http or https URL each pop is POSTed to.
	URI string
	// Opaque is the body of each pop, byte for byte; it must be valid
	// UTF-8 (the API refuses other strings rather than alter them).
	Opaque string
	// ReplicationFactor is how many nodes hold the timer, 1 to 16
	// (capped at the cluster's size). 0 leaves it to the node: 2 for a
	// new timer, the held timer's own on an update.
	ReplicationFactor int
	// Tags are the statistics tags the nodes count the timer under.
	Tags []Tag
}

// Tag is a statistics tag: the timer counts Count times under Type.
type Tag struct {
	Type string
	// Count is the weight, at least 1; 0 means 1, as in the API.
	Count int
}

// Validate reports, wrapping ErrInvalid, the first field that the API
// would refuse or that the encoding would alter.
func (t Timer) Validate() error {
	if err := checkDuration("interval", t.Interval); err != nil {
		return err
	}
	if err := checkDuration("repeat-for", t.RepeatFor); err != nil {
		return err
	}
	if t.Interval == 0 && t.RepeatFor != 0 {
		return invalidf("repeat-for %v needs an interval; with interval 0 the timer pops once", t.RepeatFor)
	}
	if t.URI == "" {
		return invalidf("the callback URI is empty")
	}
	if !utf8.ValidString(t.URI) {
		return invalidf("the callback URI is not valid UTF-8")
	}
	if !utf8.ValidString(t.Opaque) {
		return invalidf("the opaque data is not valid UTF-8")
	}
	if t.ReplicationFactor < 0 || t.ReplicationFactor > node.MaxReplicationFactor {
		return invalidf("replication factor %d is not 0 (the node's default) or 1 to %d", t.ReplicationFactor, node.MaxReplicationFactor)
	}
	if len(t.Tags) > node.MaxTags {
		return invalidf("%d tags, more than %d", len(t.Tags), node.MaxTags)
	}
	for i, tag := range t.Tags {
		if tag.Type == "" || !utf8.ValidString(tag.Type) {
			return invalidf("tag %d: the type is empty or not valid UTF-8", i)
		}
		if tag.Count < 0 || tag.Count > 1<<31-1 {
			return invalidf("tag %d (%s): count %d is not 1 to %d", i, tag.Type, tag.Count, 1<<31-1)
		}
	}
	return nil
}

func checkDuration(name string, d time.Duration) error {
	switch {
	case d < 0 || d > MaxTiming:
		return invalidf("%s %v is not between 0 and %v", name, d, MaxTiming)
	case d%time.Second != 0:
		return invalidf("%s %v is not a whole number of seconds", name, d)
	}
	return nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// MarshalJSON encodes the definition as the body of a POST or PUT
// /timers (docs/api.md), with the node's own encoder.
func (t Timer) MarshalJSON() ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return node.EncodeSpec(t.spec()), nil
}

// UnmarshalJSON decodes a timer definition with the node's own parser, so
// that it accepts exactly what a node accepts. A definition without
// repeat-for reads back with RepeatFor equal to Interval: the same timer.
func (t *Timer) UnmarshalJSON(b []byte) error {
	s, _, err := node.ParseBody(b)
	if err != nil {
		return fmt.Errorf("client: timer definition: %w", err)
	}
	*t = Timer{
		Interval:          time.Duration(s.Interval) * time.Millisecond,
		RepeatFor:         time.Duration(s.RepeatFor) * time.Millisecond,
		URI:               s.URI,
		Opaque:            s.Opaque,
		ReplicationFactor: s.RF,
	}
	for _, tag := range s.Tags {
		t.Tags = append(t.Tags, Tag{Type: tag.Type, Count: tag.Count})
	}
	return nil
}

// spec converts a valid Timer to the node's definition.
func (t Timer) spec() node.Spec {
	s := node.Spec{
		Interval:  t.Interval.Milliseconds(),
		RepeatFor: t.RepeatFor.Milliseconds(),
		URI:       t.URI,
		Opaque:    t.Opaque,
		RF:        t.ReplicationFactor,
	}
	for _, tag := range t.Tags {
		s.Tags = append(s.Tags, node.Tag{Type: tag.Type, Count: max(tag.Count, 1)})
	}
	return s
}

// ID is a timer ID as the API shows it: 32 hex digits, the timer's unique
// ID and then a bloom filter of its replicas. The bloom filter changes
// when the replicas do, so keep the ID the latest Create or Update
// returned: an update or delete reaches the replicas it names as well as
// today's.
type ID string

// ParseID checks that s is a timer ID, and returns it in lower case.
func ParseID(s string) (ID, error) {
	if _, _, err := node.ParseWireID(s); err != nil {
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
	return ID(node.FormatWireID(binary.BigEndian.Uint64(b[:])|1<<63, 0)), nil
}
