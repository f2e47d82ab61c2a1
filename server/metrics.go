package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsPath is where a Server serves its Prometheus metrics, ahead of the
// node's API.
const MetricsPath = "/metrics"

// newRegistry returns a Server's Prometheus registry, with the Go
// runtime's and the process's collectors: a registry of its own, so that
// several servers may share a process.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// withMetrics serves MetricsPath from reg, in the Prometheus text format,
// and every other request from next. It is not a ServeMux, which would
// clean and redirect the node's paths.
func withMetrics(reg *prometheus.Registry, next http.Handler) http.Handler {
	m := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MetricsPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			m.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
