package node

import (
	"context"
	"log/slog"
)

// logTimer logs one step of timer t's life at debug level: "timer " and
// the step, t's ID as the API shows it (timer=, the 32 hex digits of its
// Location, whose first 16 are the X-Chronos-Timer of its pops) and
// version, then args. The node's logger names the node, so that grep of
// one ID across a cluster's logs tells the timer's story: create,
// replicate, apply, pop, notice, delete, resync and repair
// (docs/operations.md). Nothing is formatted unless debug is enabled.
//
// A call site on a path every write or message takes asks logsTimers
// first: the values it passes in args would be put in interfaces, one
// allocation each, before logTimer could decline them.
func (n *Node) logTimer(step string, t *Timer, args ...any) {
	if !n.logsTimers() {
		return
	}
	n.log.Debug("timer "+step, append([]any{"timer", n.wireID(t), "version", t.Version, "state", stateName(t.State)}, args...)...)
}

// logsTimers reports whether logTimer logs anything.
func (n *Node) logsTimers() bool { return n.log.Enabled(context.Background(), slog.LevelDebug) }

// writeStep names a client write of t: a create, an update or a delete.
func writeStep(t *Timer) string {
	switch {
	case t.State != Live:
		return "delete"
	case t.Version == t.ID:
		return "create"
	default:
		return "update"
	}
}

// stateName is how a log line names a record's state.
func stateName(s State) string {
	switch s {
	case Live:
		return "live"
	case Tombstone:
		return "tombstone"
	case Moved:
		return "moved"
	}
	return "unknown"
}

// verdictName is how a log line names what became of an applied record.
func verdictName(v verdict) string {
	switch v {
	case took:
		return "took"
	case kept:
		return "kept"
	case older:
		return "older"
	case collided:
		return "collided"
	case full:
		return "full"
	}
	return "unknown"
}
