package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// MetricsPath is where a Server serves its Prometheus metrics, ahead of the
// node's API.
const MetricsPath = "/metrics"

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

// metrics are a Client's Prometheus collectors, on a registry of their own
// so that several servers may share a process.
type metrics struct {
	registry *prometheus.Registry
	// requests is chronos_outbound_requests_total by kind and outcome.
	requests [kinds][outcomes]prometheus.Counter
	// callbackSeconds is chronos_callback_duration_seconds.
	callbackSeconds prometheus.Histogram
	// popLateness is chronos_pop_lateness_seconds.
	popLateness prometheus.Histogram
	// peerBatches and peerBatched are chronos_outbound_batches_total and
	// chronos_outbound_batched_requests_total.
	peerBatches, peerBatched prometheus.Counter
}

// newMetrics registers the Client's collectors, and the Go runtime's and
// the process's, on a new registry.
func newMetrics(c *Client) *metrics {
	m := &metrics{registry: prometheus.NewRegistry()}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chronos_outbound_requests_total",
		Help: "Outbound requests by kind (callback, peer) and outcome (ok: answered with any status; failed: an error; shed: refused under load).",
	}, []string{"kind", "outcome"})
	for k, kind := range []string{"callback", "peer"} {
		for o, outcome := range []string{"ok", "failed", "shed"} {
			m.requests[k][o] = requests.WithLabelValues(kind, outcome)
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
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
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
	m.registry.MustRegister(requests, m.callbackSeconds, m.popLateness, depth, m.peerBatches, m.peerBatched,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Metrics returns the handler of the Client's metrics in the Prometheus
// text format.
func (c *Client) Metrics() http.Handler {
	return promhttp.HandlerFor(c.metrics.registry, promhttp.HandlerOpts{})
}

// kindOf tells a callback, which names its timer, from a request to a peer.
func kindOf(req node.Request) int {
	if _, ok := req.Header[wire.HeaderTimerID]; ok {
		return kindCallback
	}
	return kindPeer
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

// withMetrics serves MetricsPath from m and every other request from next.
// It is not a ServeMux, which would clean and redirect the node's paths.
func withMetrics(m, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MetricsPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			m.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
