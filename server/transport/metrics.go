package transport

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// The kinds and outcomes of outbound requests, as metric labels.
const (
	kindCallback = iota
	kindPeer
	kinds
)

const (
	outcomeOK = iota
	outcomeFailed
	outcomeShed
	outcomes
)

// metrics are a Client's Prometheus collectors, registered by NewClient
// on the registry the server serves.
type metrics struct {
	// requestsVec is chronos_outbound_requests_total, and requests its
	// series by kind and outcome.
	requestsVec *prometheus.CounterVec
	requests    [kinds][outcomes]prometheus.Counter
	// depth is chronos_outbound_queue_depth.
	depth prometheus.GaugeFunc
	// callbackSeconds is chronos_callback_duration_seconds.
	callbackSeconds prometheus.Histogram
	// popLateness is chronos_pop_lateness_seconds.
	popLateness prometheus.Histogram
	// peerBatches and peerBatched are chronos_outbound_batches_total and
	// chronos_outbound_batched_requests_total.
	peerBatches, peerBatched prometheus.Counter
}

// newMetrics builds the Client's collectors.
func newMetrics(c *Client) *metrics {
	m := &metrics{}
	m.requestsVec = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chronos_outbound_requests_total",
		Help: "Outbound requests by kind (callback, peer) and outcome (ok: answered with any status; failed: an error; shed: refused under load).",
	}, []string{"kind", "outcome"})
	for k, kind := range []string{"callback", "peer"} {
		for o, outcome := range []string{"ok", "failed", "shed"} {
			m.requests[k][o] = m.requestsVec.WithLabelValues(kind, outcome)
		}
	}
	m.callbackSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "chronos_callback_duration_seconds",
		Help:    "Time from a callback having its connection to its outcome (the part its timeout bounds).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2},
	})
	m.popLateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "chronos_pop_lateness_seconds",
		Help:    "Time from a pop's due time (this replica's, skewed by its rank) to its callback leaving the queue to be written.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	})
	m.depth = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chronos_outbound_queue_depth",
		Help: "Outbound requests waiting for a worker.",
	}, func() float64 { return float64(c.count.depth.Load()) })
	m.peerBatches = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "chronos_outbound_batches_total",
		Help: "Batches of requests between nodes sent to a peer's " + BatchPath + ".",
	})
	m.peerBatched = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "chronos_outbound_batched_requests_total",
		Help: "Requests between nodes sent in batches (each also counted in chronos_outbound_requests_total).",
	})
	return m
}

// collectors are the Client's collectors, to register.
func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requestsVec, m.callbackSeconds, m.popLateness, m.depth, m.peerBatches, m.peerBatched}
}

// kindOf tells a callback from a request to a peer.
func kindOf(req node.Request) int {
	if IsCallback(req) {
		return kindCallback
	}
	return kindPeer
}

// IsCallback reports whether req is a callback, which names its timer,
// rather than a request to a peer.
func IsCallback(req node.Request) bool {
	_, ok := req.Header[wire.HeaderTimerID]
	return ok
}

// noConn is the duration of a request that never had a connection.
const noConn time.Duration = -1

// record counts one outbound request's outcome; took is how long it took
// from having its connection, or noConn.
func (c *Client) record(kind, outcome int, took time.Duration) {
	switch outcome {
	case outcomeOK:
		c.count.ok.Add(1)
	case outcomeFailed:
		c.count.failed.Add(1)
	case outcomeShed:
		c.count.shed.Add(1)
	}
	c.metrics.requests[kind][outcome].Inc()
	if kind == kindCallback && took != noConn {
		c.metrics.callbackSeconds.Observe(took.Seconds())
	}
}

// sending observes j leaving its queue, waited after it was sent, to be
// written: a callback's lateness is the node's (node.Request.Late) plus
// that wait.
func (c *Client) sending(j *job, waited time.Duration) {
	if j.kind == kindCallback {
		c.metrics.popLateness.Observe((j.req.Late + waited).Seconds())
	}
}
