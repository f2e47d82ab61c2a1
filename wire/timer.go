package wire

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Timer is a timer definition as a client writes it (docs/api.md): pop
// every Interval, for RepeatFor, by POSTing Opaque to URI. It is the body
// of a create or update, and, with a Replication, of a replication PUT.
//
// The wire counts whole seconds, so Interval and RepeatFor must be whole
// seconds; Validate refuses anything the encoding would alter rather
// than round it. A node is the judge of everything else (the URI's form,
// its allow-list) and answers a 400 with the reason.
type Timer struct {
	// Interval is the time between pops, and until the first. 0 pops once,
	// at once.
	Interval time.Duration
	// RepeatFor is how long the timer keeps popping: pops fall at every
	// Interval up to RepeatFor. Parse states it (a body without one, or
	// with 0, reads as Interval: one pop); a Timer written by hand may
	// leave it 0, the API's shorthand for the same (see the package doc).
	RepeatFor time.Duration
	// URI is the absolute http or https URL each pop is POSTed to. It is
	// empty only in a tombstone: a replication body with an empty
	// callback, which deletes the timer.
	URI string
	// Opaque is the body of each pop, byte for byte; it must be valid
	// UTF-8 (the API refuses other strings rather than alter them).
	Opaque string
	// ReplicationFactor is how many nodes hold the timer, 1 to
	// MaxReplicationFactor (capped at the cluster's size). 0 leaves it to
	// the node: DefaultReplicationFactor for a new timer, the held timer's
	// own on an update.
	ReplicationFactor int
	// Tags are the statistics tags the nodes count the timer under.
	Tags []Tag
}

// Tag is a statistics tag: the timer counts Count times under Type.
type Tag struct {
	Type string `json:"type"`
	// Count is the weight, at least 1; 0 means 1 when a client writes it,
	// as the API's absent count does.
	Count int `json:"count"`
}

// Replication is the internal part of a replication PUT (api.md, "internal
// API"), present only on messages between nodes.
type Replication struct {
	// StartTimeDelta places the definition's start on the receiver's
	// clock: start = the receiver's now + StartTimeDelta. It travels in
	// milliseconds.
	StartTimeDelta time.Duration
	Seq            uint32
	Version        uint64
	ViewID         uint64
	// Definition fingerprints the definition, which a tombstone cannot be
	// fingerprinted by; 0 when absent.
	Definition uint32
	// Missed marks the pops up to Seq the sender knows were not made; 0
	// when absent. On a definition's tombstone, the pops its holder knew
	// were missed when the copy's life ended.
	Missed uint32
	// FirstTry is the version of the first try of the client write the
	// record is a retry of: a proxy whose write met a newer version
	// writes it again above that one, and the replicas know the tries
	// as one write by it, whatever their clocks. 0 when absent: the
	// record is its write's first try, or the sender's build did not
	// send it (the original's bodies never do).
	FirstTry uint64
	Replicas []string
	Sites    []string
	// Lacking names the replicas the sender knows may not hold the
	// definition: a write's replication to them went unanswered or was
	// not taken. Absent (nil) in the original's bodies.
	Lacking []string
	// SitesLacking names the other sites the sender knows may not hold
	// the record, a tombstone: its forward there went unanswered or was
	// answered 5xx. A receiver keeps its tombstone while one is named.
	// Absent (nil) in the original's bodies.
	SitesLacking []string
}

// ErrInvalid is wrapped by Validate's errors, and by a Timer's
// MarshalJSON when Validate refuses it.
var ErrInvalid = errors.New("invalid argument")

// MaxTiming is the longest interval or repeat-for a node accepts.
const MaxTiming = MaxTimingSeconds * time.Second

// Pops returns how many pops the definition asks for: one for a zero
// interval, else one per whole Interval within RepeatFor (a RepeatFor of
// 0 being one interval). A RepeatFor below Interval asks for none.
func (t Timer) Pops() int {
	if t.Interval <= 0 {
		return 1
	}
	return int(t.Stated().RepeatFor / t.Interval)
}

// Stated returns t with its RepeatFor stated: Interval where t leaves it
// 0, as Parse would read t's body back.
func (t Timer) Stated() Timer {
	if t.RepeatFor == 0 {
		t.RepeatFor = t.Interval
	}
	return t
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
	if t.ReplicationFactor < 0 || t.ReplicationFactor > MaxReplicationFactor {
		return invalidf("replication factor %d is not 0 (the node's default) or 1 to %d", t.ReplicationFactor, MaxReplicationFactor)
	}
	if len(t.Tags) > MaxTags {
		return invalidf("%d tags, more than %d", len(t.Tags), MaxTags)
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

// MarshalJSON encodes a valid definition as the body of a POST or PUT
// /timers (docs/api.md), with tag counts of 0 written as 1.
func (t Timer) MarshalJSON() ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if len(t.Tags) > 0 {
		tags := make([]Tag, len(t.Tags))
		for i, tag := range t.Tags {
			tags[i] = Tag{Type: tag.Type, Count: max(tag.Count, 1)}
		}
		t.Tags = tags
	}
	return Encode(t), nil
}

// UnmarshalJSON decodes a client body with Parse, so that it accepts
// exactly what a node accepts. A definition without repeat-for reads back
// with RepeatFor equal to Interval: the same timer.
func (t *Timer) UnmarshalJSON(b []byte) error {
	got, _, err := Parse(b)
	if err != nil {
		return fmt.Errorf("timer definition: %w", err)
	}
	*t = got
	return nil
}
