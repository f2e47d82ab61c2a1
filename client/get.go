package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/chronos-timer/chronos/wire"
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

// ReplicaState is what a replica holds of a timer: the API's own type,
// which the node writes.
type ReplicaState = wire.ReplicaState

// The states a replica reports. A client passes on any other as it came.
const (
	StateLive        = wire.StateLive
	StateTombstone   = wire.StateTombstone
	StateMoved       = wire.StateMoved
	StateAbsent      = wire.StateAbsent
	StateUnreachable = wire.StateUnreachable
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
