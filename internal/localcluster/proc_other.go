//go:build !unix

package localcluster

import (
	"os"
	"syscall"
)

// StopSignals are the signals on which the command stops the cluster.
var StopSignals = []os.Signal{os.Interrupt}

// ReloadSignals is empty: without Unix signals a node cannot be asked to
// reload.
var ReloadSignals []os.Signal

// stopSignal is the only way to stop a process without Unix signals;
// reloadSignal is nil, as no signal asks for a reload.
var (
	stopSignal   = os.Kill
	reloadSignal os.Signal
)

// ownGroup leaves the process attributes as they are.
func ownGroup() *syscall.SysProcAttr { return nil }
