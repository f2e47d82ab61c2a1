package observe

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsPath is where a node serves its Prometheus metrics, ahead of its
// API.
const MetricsPath = "/metrics"

// NewRegistry returns a node's Prometheus registry, with the Go runtime's
// and the process's collectors: a registry of its own, so that several
// nodes may share a process.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// WithMetrics serves MetricsPath from reg, in the Prometheus text format,
// and every other request from next. It is not a ServeMux, which would
// clean and redirect the node's paths.
func WithMetrics(reg *prometheus.Registry, next http.Handler) http.Handler {
	m := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MetricsPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			m.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
