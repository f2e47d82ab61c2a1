//go:build !unix

package lifecycle

import "os"

// Without Unix signals only an interrupt stops the node; reload, resync
// and the DNS file have no signal (nil never matches a received one), and
// the DNS file is read at start.
var (
	StopSignals    = []os.Signal{os.Interrupt}
	ReloadSignal   os.Signal
	ResyncSignal   os.Signal
	ControlSignals []os.Signal
	DNSSignal      os.Signal
)
