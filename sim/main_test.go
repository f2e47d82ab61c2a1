package sim

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestMain runs the package's tests and benchmarks with the collector's
// target the command sets (GCPercent), unless GOGC says otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	os.Exit(m.Run())
}
