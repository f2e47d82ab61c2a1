//go:build !unix

package server

import "os"

// Without Unix signals only an interrupt stops the node; reload and resync
// have no signal (nil never matches a received one).
var (
	stopSignals  = []os.Signal{os.Interrupt}
	reloadSignal os.Signal
	resyncSignal os.Signal
	extraSignals []os.Signal
)
