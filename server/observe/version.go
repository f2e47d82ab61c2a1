package observe

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is the release this binary was built as, when the build sets
// it: go build -ldflags "-X github.com/chronos-timer/chronos/server/observe.Version=v1.2.0".
// Empty, the version of the main module in the build information is
// used (go install of a tagged release sets it), else "devel".
var Version string

// BuildVersion is the version GET /status and chronos_build_info report.
func BuildVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// RegisterBuildInfo adds chronos_build_info, 1 with the version and the
// Go release as labels.
func RegisterBuildInfo(reg prometheus.Registerer) {
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "chronos_build_info",
		Help:        "Always 1; its labels are the version this node runs and the Go release it was built with.",
		ConstLabels: prometheus.Labels{"version": BuildVersion(), "goversion": runtime.Version()},
	})
	info.Set(1)
	reg.MustRegister(info)
}
