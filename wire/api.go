package wire

// Named limits and defaults of the API (docs/api.md).
const (
	// DefaultPort is the port a node serves on when none is configured.
	DefaultPort = 7253
	// MaxBodyBytes is the largest request body a node accepts.
	MaxBodyBytes = 1 << 20
	// MaxTimingSeconds bounds interval and repeat-for: ten years.
	MaxTimingSeconds = 10 * 366 * 24 * 3600
	// MaxReplicationFactor bounds the replication factor a client may ask for.
	MaxReplicationFactor = 16
	// MaxTags bounds the statistics tags of one timer.
	MaxTags = 32
	// DefaultReplicationFactor applies when a client gives none.
	DefaultReplicationFactor = 2
)

// The headers of the client API. The node's own, between nodes, are in
// package node.
const (
	// HeaderReason carries the reason of a refusal.
	HeaderReason = "Reason"
	// HeaderLocation carries a created timer's ID.
	HeaderLocation = "Location"
	// HeaderSequenceNumber numbers a timer's pops, from 1.
	HeaderSequenceNumber = "X-Sequence-Number"
	// HeaderRetryAfter says when to retry a write refused with 503.
	HeaderRetryAfter = "Retry-After"
	// HeaderDeadline, on a client write, is when the client stops
	// waiting for its answer, in Unix milliseconds: a node refuses the
	// write once that has passed on its clock (408), so that a request
	// delivered late never takes effect after its client gave up.
	HeaderDeadline = "X-Chronos-Deadline"
	// HeaderTimerID names the timer a callback pops: the 16 hex digits of
	// its unique ID (the first half of the ID in Location), which stay the
	// same for the timer's life. With X-Sequence-Number it lets a client
	// tell a duplicate pop from a new one.
	HeaderTimerID = "X-Chronos-Timer"
)
