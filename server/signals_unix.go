//go:build unix

package server

import (
	"os"
	"syscall"
)

// The original service's signals: reload the cluster on SIGHUP, resync on
// SIGUSR1, stop on SIGINT or SIGTERM.
var (
	stopSignals  = []os.Signal{os.Interrupt, syscall.SIGTERM}
	reloadSignal = os.Signal(syscall.SIGHUP)
	resyncSignal = os.Signal(syscall.SIGUSR1)
	extraSignals = []os.Signal{reloadSignal, resyncSignal}
)
