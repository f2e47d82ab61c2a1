package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/node"
)

// StatusPath is where a Server answers what its node holds and how its
// latest resync went, ahead of the node's API: an operator scaling the
// cluster stops a leaving node only once every staying node's resync
// says completed (docs/operations.md).
const StatusPath = "/status"

// Status is the JSON body of GET /status.
type Status struct {
	Address    string       `json:"address"`
	ViewID     string       `json:"cluster-view-id"`
	Nodes      []string     `json:"nodes"`
	Joining    []string     `json:"joining,omitempty"`
	Leaving    []string     `json:"leaving,omitempty"`
	Timers     int          `json:"timers"`
	Tombstones int          `json:"tombstones"`
	Resync     ResyncReport `json:"resync"`
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
	Started      *time.Time `json:"started,omitempty"`
	Finished     *time.Time `json:"finished,omitempty"`
}

// report turns the node's resync status into its JSON form.
func report(r node.ResyncStatus) ResyncReport {
	out := ResyncReport{
		State: resyncState(r), Runs: r.Runs, ViewID: formatView(r.ViewID),
		Peers: r.Peers, PeersDone: r.PeersDone, FailedPeers: r.Failed,
		Received: r.Received, Taken: r.Taken, Replicated: r.Replicated,
		Tombstoned: r.Tombstoned, SendFailures: r.SendFailures,
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

// formatView writes a cluster view ID as GET /timers takes it: decimal.
func formatView(v uint64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatUint(v, 10)
}

// Status returns what the node holds and its latest resync's progress.
func (s *Server) Status() Status {
	var st Status
	s.serial.Do(func() {
		m := s.node.Membership()
		stats := s.node.Stats()
		st = Status{
			Address: s.node.Address(), ViewID: formatView(s.node.ViewID()),
			Nodes: m.Nodes, Joining: m.Joining, Leaving: m.Leaving,
			Timers: stats.Timers, Tombstones: stats.Tombstones,
			Resync: report(s.node.ResyncStatus()),
		}
	})
	return st
}

// withStatus serves StatusPath and every other request from next.
func withStatus(s *Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != StatusPath || r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		body, err := json.MarshalIndent(s.Status(), "", "  ")
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(body, '\n'))
	})
}

// nodeMetric is one of the node's own figures, read from its counters and
// its latest resync.
type nodeMetric struct {
	name, help string
	kind       prometheus.ValueType
	value      func(node.Stats, node.ResyncStatus) float64
}

// nodeMetrics are the node's own figures on /metrics.
var nodeMetrics = []nodeMetric{
	{"chronos_timers", "Live timers this node holds.", prometheus.GaugeValue,
		func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Timers) }},
	{"chronos_tombstones", "Tombstones (deleted or finished timers) this node still keeps.", prometheus.GaugeValue,
		func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Tombstones) }},
	{"chronos_pops_total", "Callbacks sent.", prometheus.CounterValue,
		func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Pops) }},
	{"chronos_resync_running", "1 while a resync runs on this node.", prometheus.GaugeValue,
		func(_ node.Stats, r node.ResyncStatus) float64 { return b2f(r.Running) }},
	{"chronos_resync_peers_pending", "Peers the running resync has not finished with (0 when none runs).", prometheus.GaugeValue,
		func(_ node.Stats, r node.ResyncStatus) float64 {
			if !r.Running {
				return 0
			}
			return float64(r.Peers - r.PeersDone - len(r.Failed))
		}},
	{"chronos_resync_failed_peers", "Peers the latest resync gave up on.", prometheus.GaugeValue,
		func(_ node.Stats, r node.ResyncStatus) float64 { return float64(len(r.Failed)) }},
	{"chronos_resyncs_completed_total", "Resyncs that reached every peer.", prometheus.CounterValue,
		func(_ node.Stats, r node.ResyncStatus) float64 { return float64(r.Completed) }},
	{"chronos_resyncs_incomplete_total", "Resyncs that gave up on a peer.", prometheus.CounterValue,
		func(_ node.Stats, r node.ResyncStatus) float64 { return float64(r.Incomplete) }},
	{"chronos_resync_timers_taken", "Timers the latest resync took.", prometheus.GaugeValue,
		func(_ node.Stats, r node.ResyncStatus) float64 { return float64(r.Taken) }},
	{"chronos_resync_pages_served_total", "GET /timers pages this node answered.", prometheus.CounterValue,
		func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ResyncPagesServed) }},
}

// nodeCollector reports nodeMetrics, reading the node's counters once per
// scrape under its lock.
type nodeCollector struct {
	s     *Server
	descs []*prometheus.Desc
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	var st node.Stats
	var r node.ResyncStatus
	c.s.serial.Do(func() { st, r = c.s.node.Stats(), c.s.node.ResyncStatus() })
	for i, m := range nodeMetrics {
		ch <- prometheus.MustNewConstMetric(c.descs[i], m.kind, m.value(st, r))
	}
}

// registerNodeMetrics adds the node's own figures to the Prometheus
// registry: timers held and the latest resync's progress.
func (s *Server) registerNodeMetrics(reg *prometheus.Registry) {
	c := &nodeCollector{s: s}
	for _, m := range nodeMetrics {
		c.descs = append(c.descs, prometheus.NewDesc(m.name, m.help, nil, nil))
	}
	reg.MustRegister(c)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
