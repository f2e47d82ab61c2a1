package observe

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/transport"
)

// StatusPath is where a node answers what its node holds and how its
// latest resync went, ahead of the node's API: an operator scaling the
// cluster stops a leaving node only once every staying node's resync
// says completed (docs/operations.md).
const StatusPath = "/status"

// Status is the JSON body of GET /status. Instance is the instance
// number the node issues IDs with, InstanceDerived whether it was derived
// from the membership; PID the serving process's ID; Peers the reachability of the other members and
// the remote sites, as this node's requests to them found it.
type Status struct {
	Address         string       `json:"address"`
	PID             int          `json:"pid"`
	Version         string       `json:"version"`
	Instance        int          `json:"instance"`
	InstanceDerived bool         `json:"instance-derived"`
	ViewID          string       `json:"cluster-view-id"`
	Nodes           []string     `json:"nodes"`
	Joining         []string     `json:"joining,omitempty"`
	Leaving         []string     `json:"leaving,omitempty"`
	Peers           []PeerStatus `json:"peers"`
	Timers          int          `json:"timers"`
	Tombstones      int          `json:"tombstones"`
	Resync          ResyncReport `json:"resync"`
}

// ResyncReport is the latest resync's progress. State is "running",
// "completed" (every peer answered every page), "incomplete" (it gave up
// on the peers in failed-peers: run it again once they are back, with
// SIGUSR1) or "none".
type ResyncReport struct {
	State        string     `json:"state"`
	Runs         uint64     `json:"runs"`
	ViewID       string     `json:"cluster-view-id"`
	Peers        int        `json:"peers"`
	PeersDone    int        `json:"peers-done"`
	FailedPeers  []string   `json:"failed-peers,omitempty"`
	Received     uint64     `json:"timers-received"`
	Taken        uint64     `json:"timers-taken"`
	Replicated   uint64     `json:"replicated"`
	Tombstoned   uint64     `json:"tombstoned"`
	SendFailures uint64     `json:"send-failures"`
	Refused      uint64     `json:"timers-refused"`
	Started      *time.Time `json:"started,omitempty"`
	Finished     *time.Time `json:"finished,omitempty"`
}

// Report turns the node's resync status into its JSON form.
func Report(r node.ResyncStatus) ResyncReport {
	out := ResyncReport{
		State: resyncState(r), Runs: r.Runs, ViewID: FormatView(r.ViewID),
		Peers: r.Peers, PeersDone: r.PeersDone, FailedPeers: r.Failed,
		Received: r.Received, Taken: r.Taken, Replicated: r.Replicated,
		Tombstoned: r.Tombstoned, SendFailures: r.SendFailures, Refused: r.Refused,
	}
	if !r.Started.IsZero() {
		out.Started = &r.Started
	}
	if !r.Finished.IsZero() {
		out.Finished = &r.Finished
	}
	return out
}

func resyncState(r node.ResyncStatus) string {
	switch {
	case r.Running:
		return "running"
	case r.Runs == 0:
		return "none"
	case len(r.Failed) > 0:
		return "incomplete"
	}
	return "completed"
}

// FormatView writes a cluster view ID as GET /timers takes it: decimal,
// and "" for none.
func FormatView(v uint64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatUint(v, 10)
}

// WithStatus serves StatusPath with what status returns, and every other
// request from next.
func WithStatus(status func() Status, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != StatusPath || r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		body, err := json.MarshalIndent(status(), "", "  ")
		if err != nil {
			transport.WriteError(w, http.StatusInternalServerError, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(body, '\n'))
	})
}
