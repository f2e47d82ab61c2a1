// Package localcluster is the process harness: every test, tool and
// command that runs real chronos processes starts them through it.
//
//   - Build builds cmd/chronos.
//   - Launch starts one process (a Spec) and keeps its output in a Log; a
//     Proc's AwaitReady polls the node's /status until it answers with the
//     node's own address, Stop sends SIGTERM and kills after a bound, and
//     Kill is a power cut.
//   - FreeAddrs picks free loopback ports, and OnFreeAddrs starts again on
//     fresh ones when a node finds its port taken (ErrPortTaken), so that
//     no caller gives up, or skips, because a port is taken.
//   - Start runs a cluster: it writes each node's configuration files,
//     starts a callback sink that prints every pop it receives, starts the
//     nodes, waits until each serves, forwards their logs with a node
//     prefix, and stops them all when its context ends. Run is `chronos
//     cluster` (`make cluster`); internal/proctest, chronos-load and the
//     nemesis use the same pieces.
//
// It is a development tool, not a way to deploy: every node, and the sink,
// listens on loopback only. docs/operations.md says how to run a cluster
// of machines, and examples/ holds configuration files for one.
package localcluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options.
const (
	// DefaultNodes is how many nodes a local cluster has.
	DefaultNodes = 3
	// DefaultBasePort is the first node's port; node i listens on
	// DefaultBasePort+i-1, so a three-node cluster takes 7253 to 7255.
	DefaultBasePort = 7253
	// DefaultSink is where the callback sink listens: the README's curl
	// example names http://127.0.0.1:9999/cb as its callback.
	DefaultSink = "127.0.0.1:9999"
)

// Limits of Options.
const (
	// MaxNodes bounds the nodes of a local cluster: one machine, and a
	// person reading their interleaved logs.
	MaxNodes = 16
	// readyTimeout bounds the wait for a node to answer /ping after it
	// started. A ceiling against a node that hangs, not a timing.
	readyTimeout = 30 * time.Second
	// stopTimeout bounds the wait for a node to exit after SIGTERM: the
	// node's own graceful shutdown takes at most 15 s
	// (config.DefaultShutdownTimeout). Then it is killed.
	stopTimeout = 20 * time.Second
)

// Host is the address every node and the sink listen on.
const Host = "127.0.0.1"

// Options say what cluster to run. Start from DefaultOptions.
type Options struct {
	// Nodes is how many nodes to start, 1..MaxNodes.
	Nodes int
	// BasePort is the first node's port; the others follow it. Zero picks
	// free loopback ports, and others if a node finds its port taken: what
	// tests and tools want, as they never give up on a taken port.
	BasePort int
	// Dir receives the configuration files and the logs; empty means a
	// new temporary directory. It is kept when the cluster stops, so the
	// logs can be read afterwards.
	Dir string
	// Sink is the loopback host:port of the callback sink; empty runs
	// none.
	Sink string
	// Bin is the chronos binary each node runs.
	Bin string
	// Out receives what the cluster prints: how to use it, the sink's
	// pops and the nodes' logs, one line at a time. Nil discards it.
	Out io.Writer
	// LogLevel is the nodes' [logging] level; zero is 2 (warnings).
	LogLevel int
	// InMemory has the nodes keep their timers in memory only; otherwise
	// each keeps them in its own folder, across restarts.
	InMemory bool
	// NodeConf, if set, returns more settings for node i (from 0) of the
	// cluster of addrs, appended to its own file: INI sections such as
	// "[limits]\nmemory_limit = 1GiB\n".
	NodeConf func(i int, addrs []string) string
}

// DefaultOptions returns three nodes on 127.0.0.1:7253-7255 with a sink on
// 127.0.0.1:9999, in a temporary directory. Bin must still be set.
func DefaultOptions() Options {
	return Options{Nodes: DefaultNodes, BasePort: DefaultBasePort, Sink: DefaultSink}
}

// Validate reports the first invalid option, naming it and its value.
func (o Options) Validate() error {
	if o.Nodes < 1 || o.Nodes > MaxNodes {
		return fmt.Errorf("localcluster: nodes %d is not in 1..%d", o.Nodes, MaxNodes)
	}
	if o.BasePort < 0 || o.BasePort+o.Nodes-1 > 65535 {
		return fmt.Errorf("localcluster: base port %d with %d nodes does not fit in 1..65535", o.BasePort, o.Nodes)
	}
	if strings.ContainsAny(o.Dir, "#;\n\r") {
		// The log folder is written into an INI file, where these would
		// start a comment or end the value.
		return fmt.Errorf("localcluster: dir %q holds '#', ';' or a line break, which its configuration files cannot carry", o.Dir)
	}
	if o.Bin == "" {
		return errors.New("localcluster: no chronos binary to run")
	}
	if o.Sink == "" {
		return nil
	}
	ap, err := netip.ParseAddrPort(o.Sink)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return fmt.Errorf("localcluster: sink %q is not a loopback address with a port, such as %s", o.Sink, DefaultSink)
	}
	for i, a := range o.addrs() {
		if o.Sink == a {
			return fmt.Errorf("localcluster: sink %s is node %d's address", o.Sink, i+1)
		}
	}
	return nil
}

// addr is node i's address (i from 0).
func (o Options) addr(i int) string {
	return net.JoinHostPort(Host, strconv.Itoa(o.BasePort+i))
}

// addrs lists every node's address; none with BasePort 0, where they are
// picked when the cluster starts.
func (o Options) addrs() []string {
	if o.BasePort == 0 {
		return nil
	}
	out := make([]string, o.Nodes)
	for i := range out {
		out[i] = o.addr(i)
	}
	return out
}

// checkFree fails, naming the address, if something already listens on
// one of the cluster's given addresses: a node that cannot bind would
// stop at once, and the error is clearer here.
func (o Options) checkFree() error {
	addrs := o.addrs()
	if o.Sink != "" {
		addrs = append(addrs, o.Sink)
	}
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("localcluster: %s is in use (a `make run` or another `make cluster`?): "+
				"stop what listens there, or choose other ports with -base-port and -sink: %w", a, err)
		}
		ln.Close()
	}
	return nil
}
