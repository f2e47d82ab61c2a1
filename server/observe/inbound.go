package observe

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

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
		sw := statusWriters.Get().(*statusWriter)
		*sw = statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		code := sw.code()
		// A handler may not use its writer once it has returned.
		*sw = statusWriter{}
		statusWriters.Put(sw)
		requests.WithLabelValues(routeOf(r), codeLabel(code)).Inc()
	})
}

// statusWriters pools the statusWriters of requests answered.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// codeLabel is the label of status code: strconv.Itoa(code), without
// allocating for the three-digit codes of HTTP.
func codeLabel(code int) string {
	if code >= 100 && code < 100+len(codeLabels) {
		return codeLabels[code-100]
	}
	return strconv.Itoa(code)
}

var codeLabels = func() (l [900]string) {
	for i := range l {
		l[i] = strconv.Itoa(100 + i)
	}
	return l
}()

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
