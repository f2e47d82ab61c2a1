//go:build !unix

package localcluster

import (
	"os"
	"syscall"
)

// StopSignals are the signals on which the command stops the cluster.
var StopSignals = []os.Signal{os.Interrupt}

// stopSignal is the only way to stop a process without Unix signals.
var stopSignal = os.Kill

// ownGroup leaves the process attributes as they are.
func ownGroup() *syscall.SysProcAttr { return nil }
