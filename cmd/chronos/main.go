// Command chronos runs one production Chronos node: it parses flags, loads
// and validates the configuration, wires the adapters and serves until
// SIGINT or SIGTERM. SIGHUP reloads the cluster configuration; SIGUSR1
// asks for a resync; SIGUSR2 re-reads the DNS config file. It takes the
// original Chronos's command line: --daemon returns once the node serves
// in the background, with --pidfile written.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/chronos-timer/chronos/server"
	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/server/lifecycle"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cluster" {
		os.Exit(runCluster(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run returns the process exit code: 0 after a clean shutdown (or, with
// --daemon, once the node serves in the background), 1 on a failure, 2 on
// bad flags or configuration. Usage, errors and logs go to stderr, and
// the logs also to the [logging] folder's file.
func run(args []string, stderr io.Writer) int {
	fs := newFlagSet("chronos", stderr,
		"Usage: chronos [flags]\n       chronos cluster [flags]   (a local cluster on loopback; chronos cluster -h)\n")
	var flags config.Flags
	flags.Register(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := flags.Load()
	if err != nil {
		return fail(stderr, 2, err)
	}
	if flags.Daemon && !lifecycle.DaemonChild() {
		if cfg.LogFolder == "" {
			fmt.Fprintln(stderr, "chronos: warning: --daemon without a [logging] folder: the log is discarded")
		}
		if err := lifecycle.Daemonize(cfg, args); err != nil {
			return fail(stderr, 1, err)
		}
		return 0
	}
	log, closeLog, err := lifecycle.OpenLog(cfg, stderr)
	if err != nil {
		return fail(stderr, 1, err)
	}
	defer closeLog()
	config.LogWarnings(log, cfg.Warnings)
	if err := server.Run(context.Background(), cfg, log); err != nil {
		log.Error("chronos stopped", "err", err)
		lifecycle.DaemonStarted(err)
		return 1
	}
	return 0
}

// newFlagSet returns a flag set named name that prints to stderr, its
// usage the text usage and then the flags.
func newFlagSet(name string, stderr io.Writer, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs. Unless ok, the command exits with code: 0
// after -h, 2 on a bad flag or an argument that is not a flag.
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2, false
	}
	return 0, true
}

// fail reports err, to stderr and to a waiting --daemon parent, and
// returns code.
func fail(stderr io.Writer, code int, err error) int {
	fmt.Fprintf(stderr, "chronos: %v\n", err)
	lifecycle.DaemonStarted(err)
	return code
}
