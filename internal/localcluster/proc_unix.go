//go:build unix

package localcluster

import (
	"os"
	"syscall"
)

// StopSignals are the signals on which the command stops the cluster: a
// closed terminal's SIGHUP too, so that no node outlives it.
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// stopSignal asks a node to stop gracefully.
var stopSignal os.Signal = syscall.SIGTERM

// ownGroup puts a node in a process group of its own, so that the
// terminal's Ctrl-C reaches only the command, which then stops the nodes
// itself and says so.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
