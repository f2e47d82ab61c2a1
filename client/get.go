package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// TimerInfo is what GET /timers/<id> answers: the timer's definition and
// progress as the most advanced live replica holds it, and what each
// replica holds.
type TimerInfo struct {
	ID    ID    `json:"id"`
	Timer Timer `json:"timer"`
	// SequenceNumber is how many pops of the definition were made: the
	// next pop carries SequenceNumber+1.
	SequenceNumber uint64 `json:"sequence-number"`
	// NextPop is when the next pop is due, zero when none is.
	NextPop  time.Time     `json:"next-pop,omitzero"`
	Replicas []ReplicaInfo `json:"replicas"`
}

// ReplicaInfo is what one replica of a timer holds.
type ReplicaInfo struct {
	Node           string       `json:"node"`
	State          ReplicaState `json:"state"`
	SequenceNumber uint64       `json:"sequence-number"`
	NextPop        time.Time    `json:"next-pop,omitzero"`
}

// ReplicaState is what a replica holds of a timer.
type ReplicaState string

// The states a replica reports. A client passes on any other as it came.
const (
	// StateLive: the replica holds the timer and pops it.
	StateLive ReplicaState = "live"
	// StateTombstone: the replica holds the timer's tombstone (deleted,
	// or moved away by a resync).
	StateTombstone ReplicaState = "tombstone"
	// StateAbsent: the replica holds nothing of the timer.
	StateAbsent ReplicaState = "absent"
	// StateUnreachable: the replica did not answer the node asked.
	StateUnreachable ReplicaState = "unreachable"
)

// decodeInfo reads the JSON body of GET /timers/<id>.
func decodeInfo(b []byte) (*TimerInfo, error) {
	var info TimerInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("the answer is not a timer: %w", err)
	}
	id, err := ParseID(string(info.ID))
	if err != nil {
		return nil, fmt.Errorf("the answer's id %q is not a timer ID", info.ID)
	}
	info.ID = id
	return &info, nil
}
