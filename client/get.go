package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// TimerInfo is what GET /timers/<id> answers (docs/api.md, reading a
// timer): the newest definition any node holds, with its progress, and
// what each node that may hold the timer holds. A read repairs nothing:
// a replica that missed a write shows an older Version.
type TimerInfo struct {
	ID    ID    `json:"id"`
	Timer Timer `json:"timer"`
	// SequenceNumber is how many pops of the definition were made: the
	// next pop carries SequenceNumber+1.
	SequenceNumber uint64 `json:"sequence-number"`
	// NextPop is when the next pop is due, before any backup's 2 s per
	// rank; zero when no pop remains.
	NextPop  time.Time     `json:"next-pop,omitzero"`
	Replicas []ReplicaInfo `json:"replicas"`
}

// ReplicaInfo is what one node holds of a timer. Version (a decimal
// number) orders the client writes, and is empty when the node holds
// nothing or did not answer; SequenceNumber and NextPop are given for a
// live copy only.
type ReplicaInfo struct {
	Node           string       `json:"node"`
	State          ReplicaState `json:"state"`
	Version        string       `json:"version,omitempty"`
	SequenceNumber uint64       `json:"sequence-number,omitempty"`
	NextPop        time.Time    `json:"next-pop,omitzero"`
}

// ReplicaState is what a replica holds of a timer.
type ReplicaState string

// The states a replica reports. A client passes on any other as it came.
const (
	// StateLive: the replica holds the timer and pops it.
	StateLive ReplicaState = "live"
	// StateTombstone: the replica holds the timer's tombstone (deleted,
	// or finished).
	StateTombstone ReplicaState = "tombstone"
	// StateMoved: the timer left the node in a scale and lives on others.
	StateMoved ReplicaState = "moved"
	// StateAbsent: the replica holds nothing of the timer.
	StateAbsent ReplicaState = "absent"
	// StateUnreachable: the replica did not answer the node asked in
	// time.
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
