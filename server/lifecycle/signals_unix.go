//go:build unix

package lifecycle

import (
	"os"
	"syscall"
)

// The original service's signals: stop on SIGINT or SIGTERM, reload the
// cluster on SIGHUP, resync on SIGUSR1, re-read the DNS config file on
// SIGUSR2 (its init script's reload-dns).
var (
	// StopSignals stop the node.
	StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}
	// ReloadSignal reloads the cluster configuration.
	ReloadSignal = os.Signal(syscall.SIGHUP)
	// ResyncSignal asks for a resync.
	ResyncSignal = os.Signal(syscall.SIGUSR1)
	// ControlSignals are ReloadSignal and ResyncSignal, those a running
	// node serves without stopping.
	ControlSignals = []os.Signal{ReloadSignal, ResyncSignal}
	// DNSSignal re-reads the DNS config file.
	DNSSignal os.Signal = syscall.SIGUSR2
)
