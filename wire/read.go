package wire

// ReplicaState is what one node holds of a timer, as GET /timers/<id>
// (docs/api.md, reading a timer) reports it for each node that may hold
// the timer: the node writes it, the client reads it.
type ReplicaState string

// The states a read reports. A reader passes on any other as it came.
const (
	// StateLive: the replica holds the timer and pops it.
	StateLive ReplicaState = "live"
	// StateTombstone: the replica holds the timer's tombstone (deleted,
	// or finished).
	StateTombstone ReplicaState = "tombstone"
	// StateMoved: the timer left the node in a scale and lives on
	// others. It does not count as a delete.
	StateMoved ReplicaState = "moved"
	// StateAbsent: the replica holds nothing of the timer.
	StateAbsent ReplicaState = "absent"
	// StateUnreachable: the replica did not answer the node asked in
	// time.
	StateUnreachable ReplicaState = "unreachable"
)
