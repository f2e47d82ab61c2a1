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
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run returns the process exit code: 0 after a clean shutdown (or, with
// --daemon, once the node serves in the background), 1 on a failure, 2 on
// bad flags or configuration. Usage, errors and logs go to stderr, and
// the logs also to the [logging] folder's file.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("chronos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var flags server.Flags
	flags.Register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "chronos: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg, err := flags.Load()
	if err != nil {
		return fail(stderr, 2, err)
	}
	if flags.Daemon && !server.DaemonChild() {
		if cfg.LogFolder == "" {
			fmt.Fprintln(stderr, "chronos: warning: --daemon without a [logging] folder: the log is discarded")
		}
		if err := server.Daemonize(cfg, args); err != nil {
			return fail(stderr, 1, err)
		}
		return 0
	}
	log, closeLog, err := server.OpenLog(cfg, stderr)
	if err != nil {
		return fail(stderr, 1, err)
	}
	defer closeLog()
	server.LogWarnings(log, cfg.Warnings)
	if err := server.Run(context.Background(), cfg, log); err != nil {
		log.Error("chronos stopped", "err", err)
		server.DaemonStarted(err)
		return 1
	}
	return 0
}

// fail reports err, to stderr and to a waiting --daemon parent, and
// returns code.
func fail(stderr io.Writer, code int, err error) int {
	fmt.Fprintf(stderr, "chronos: %v\n", err)
	server.DaemonStarted(err)
	return code
}
