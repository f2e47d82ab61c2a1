package observe

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/server/transport"
)

// The routes of inbound requests, as the label of
// chronos_http_requests_total: a fixed set, never the raw path, which
// holds timer IDs and whatever a client sends.
const (
	routeTimers     = "timers"     // POST /timers (and other methods but GET)
	routeResync     = "resync"     // GET /timers: a resync page
	routeTimer      = "timer"      // /timers/<id>
	routeReferences = "references" // /timers/references
	routePing       = "ping"
	routeStatus     = "status"
	routeMetrics    = "metrics"
	routeBatch      = "batch" // transport.BatchPath: requests between nodes, batched
	routeOther      = "other"
)

// routeOf names the route of r. It reads the path as the node does: as
// sent, still escaped.
func routeOf(r *http.Request) string {
	switch p := r.URL.EscapedPath(); {
	case p == "/timers" && r.Method == http.MethodGet:
		return routeResync
	case p == "/timers":
		return routeTimers
	case p == "/timers/references":
		return routeReferences
	case strings.HasPrefix(p, "/timers/"):
		return routeTimer
	case p == "/ping":
		return routePing
	case p == StatusPath:
		return routeStatus
	case p == MetricsPath:
		return routeMetrics
	case p == transport.BatchPath:
		return routeBatch
	}
	return routeOther
}

// CountRequests counts each request next answers, once it has answered,
// by route and status code, as chronos_http_requests_total on reg.
func CountRequests(reg prometheus.Registerer, next http.Handler) http.Handler {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chronos_http_requests_total",
		Help: "Inbound HTTP requests answered, by route (timers, timer, resync, references, ping, status, metrics, batch, other) and status code.",
	}, []string{"route", "code"})
	reg.MustRegister(requests)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		requests.WithLabelValues(routeOf(r), strconv.Itoa(sw.code())).Inc()
	})
}

// statusWriter notes the status code a handler answers with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status the client was answered with: net/http answers 200
// for a handler that wrote nothing.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
