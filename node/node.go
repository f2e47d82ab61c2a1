package node

import (
	"log/slog"
)

// Node is one Chronos node: the replicating proxy and the local timer
// wheel. It is single-threaded: the driver calls Handle, alarm callbacks and
// network completions one at a time.
type Node struct {
	cfg   Config
	log   *slog.Logger
	store *Store
}

// Stats are the node's plain counters, read by the production adapter's
// metrics and by tests.
type Stats struct {
	// Timers is the number of live timers held; Tombstones the deleted or
	// finished ones still kept.
	Timers     int
	Tombstones int
	// Pops counts callbacks sent; CallbackFailures those that failed.
	Pops             uint64
	CallbackFailures uint64
	// PopLatenessMs accumulates how late pops were sent, in milliseconds,
	// relative to their skewed due time.
	PopLatenessMs uint64
	// ReplicationsSent and ReplicationsReceived count internal PUTs.
	ReplicationsSent     uint64
	ReplicationsReceived uint64
	// Tags counts live timers per statistics tag.
	Tags map[string]int
}

// New returns a node for cfg, or the first reason cfg is invalid.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	panic("TODO")
}

// Handle serves one inbound request and calls reply exactly once, possibly
// later (after replicas acknowledge), from a network completion.
func (n *Node) Handle(req Request, reply func(Response)) { panic("TODO") }

// Stats returns a snapshot of the node's counters.
func (n *Node) Stats() Stats { panic("TODO") }
