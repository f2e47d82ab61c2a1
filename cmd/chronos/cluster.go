package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/chronos-timer/chronos/internal/localcluster"
)

// runCluster runs `chronos cluster`: a local cluster of nodes of this
// binary on loopback, until SIGINT or SIGTERM; SIGHUP has every node
// reload its configuration. It returns the exit code: 0 once every node
// stopped cleanly, 1 on a failure, 2 on bad flags.
func runCluster(args []string, stdout, stderr io.Writer) int {
	fs, o := clusterFlags(stderr)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "chronos cluster: %v\n", err)
		return 1
	}
	o.Bin, o.Out = bin, stdout
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "chronos cluster: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), localcluster.StopSignals...)
	defer stop()
	reload := make(chan os.Signal, 1)
	if len(localcluster.ReloadSignals) > 0 {
		signal.Notify(reload, localcluster.ReloadSignals...)
		defer signal.Stop(reload)
	}
	if err := localcluster.Run(ctx, *o, reload); err != nil {
		fmt.Fprintf(stderr, "chronos cluster: %v\n", err)
		return 1
	}
	return 0
}

// clusterFlags defines the flags of `chronos cluster` over the default
// options.
func clusterFlags(stderr io.Writer) (*flag.FlagSet, *localcluster.Options) {
	fs := newFlagSet("chronos cluster", stderr, "Usage: chronos cluster [flags]\n\n"+
		"Runs a local Chronos cluster on loopback: writes each node's configuration,\n"+
		"starts the nodes and a callback sink, prints how to use them, forwards\n"+
		"their logs, and stops them all on Ctrl-C.\n")
	o := localcluster.DefaultOptions()
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, fmt.Sprintf("how many nodes to start, 1-%d", localcluster.MaxNodes))
	fs.IntVar(&o.BasePort, "base-port", o.BasePort, "the first node's `port` on 127.0.0.1; the others take the ports after it; 0 picks free ports")
	fs.StringVar(&o.Dir, "dir", "", "`folder` for the configuration files and logs (default a new temporary folder); kept when the cluster stops")
	fs.StringVar(&o.Sink, "sink", o.Sink, "loopback `host:port` of a callback endpoint that prints every pop; empty for none")
	return fs, &o
}
