//go:build unix

package localcluster

import (
	"os"
	"syscall"
)

// StopSignals are the signals on which the command stops the cluster.
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// ReloadSignals are the signals on which the command has every node
// reload its configuration, as one node does on SIGHUP. A closed terminal
// sends SIGHUP too: the command then finds its output gone and stops the
// cluster, so that no node outlives the terminal (Cluster.Wait).
var ReloadSignals = []os.Signal{syscall.SIGHUP}

// stopSignal asks a node to stop gracefully, and reloadSignal to reload
// its configuration.
var (
	stopSignal   os.Signal = syscall.SIGTERM
	reloadSignal os.Signal = syscall.SIGHUP
)

// ownGroup puts a node in a process group of its own, so that the
// terminal's Ctrl-C reaches only the command, which then stops the nodes
// itself and says so.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
