// Command chronosctl creates, updates, deletes and reads timers of a
// Chronos cluster, shows a node's status, and watches pops arrive at a
// callback sink it serves. It is a thin command line over package client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/chronos-timer/chronos/client"
)

// Exit statuses.
const (
	exitOK = 0
	// exitFailed: the cluster could not do it (no node answered, 503, a
	// malformed answer).
	exitFailed = 1
	// exitUsage: bad flags or arguments; nothing was sent.
	exitUsage = 2
	// exitRefused: a node refused the request (400 or another 4xx).
	exitRefused = 3
	// exitNotFound: get found no replica holding the timer live.
	exitNotFound = 4
)

const usage = `usage: chronosctl [-nodes host:port,...] [-timeout d] [-tls-ca-file f [-tls-cert-file f -tls-key-file f]] <command> [flags] [args]

commands:
  create -interval s -uri URL [-repeat-for s] [-opaque text] [-rf n] [-tags type[:count],...]
         create a timer; prints its ID
  update <id> -interval s -uri URL [same flags as create]
         replace a timer's definition; prints its ID as the node now gives it
  delete <id>
         delete a timer
  get <id>
         print what the timer's replicas hold, as JSON
  status [host:port]
         print GET /status of a node (default: the first of -nodes that answers)
  watch [-listen host:port] [-count n]
         serve a callback sink, print its URI, then each pop as it arrives
         (duplicates dropped, and reported on stderr)

Durations are seconds ("10") or Go durations ("10s", "1m30s").

With -tls-ca-file the nodes are reached over HTTPS, their certificates
checked against that CA; -tls-cert-file and -tls-key-file present a client
certificate to nodes that ask for one.

exit status: 0 done, 1 the cluster failed (no answer, 503), 2 bad usage,
3 a node refused the request (the reason is printed), 4 get: no such timer
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs one command and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chronosctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	nodes := fs.String("nodes", "127.0.0.1:7253", "comma-separated node addresses (host:port or URL)")
	timeout := fs.Duration("timeout", time.Minute, "bound on the whole command, retries included (not on watch)")
	verbose := fs.Bool("v", false, "log each retry to stderr")
	caFile := fs.String("tls-ca-file", "", "`path` of the CA certificate (PEM) the nodes' certificates are signed by: reach them over HTTPS")
	certFile := fs.String("tls-cert-file", "", "`path` of a client certificate (PEM) to present, with -tls-key-file")
	keyFile := fs.String("tls-key-file", "", "`path` of the client certificate's key (PEM)")
	if err := fs.Parse(args); err != nil {
		return usageError(stderr, err)
	}
	if fs.NArg() == 0 {
		return usageError(stderr, errors.New("no command"))
	}
	var opts []client.Option
	if *verbose {
		opts = append(opts, client.WithLogger(newLogger(stderr)))
	}
	if *caFile != "" || *certFile != "" || *keyFile != "" {
		tlsCfg, err := client.LoadTLS(*caFile, *certFile, *keyFile)
		if err != nil {
			return usageError(stderr, err)
		}
		opts = append(opts, client.WithTLS(tlsCfg))
	}
	c, err := client.New(splitList(*nodes), opts...)
	if err != nil {
		return report(stderr, err)
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	if cmd == "watch" {
		return report(stderr, watch(ctx, rest, stdout, stderr))
	}
	commands := map[string]func(context.Context, *client.Client, []string, io.Writer) error{
		"create": create, "update": update, "delete": remove, "get": get, "status": status,
	}
	f, ok := commands[cmd]
	if !ok {
		return usageError(stderr, fmt.Errorf("unknown command %q", cmd))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return report(stderr, f(ctx, c, rest, stdout))
}

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

func usageError(stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "chronosctl: %v\n\n%s", err, usage)
	return exitUsage
}

// report prints err, if any, and returns the exit status it stands for.
func report(stderr io.Writer, err error) int {
	var st *client.StatusError
	code := exitFailed
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		return usageError(stderr, err)
	case errors.Is(err, client.ErrInvalid):
		code = exitUsage
	case errors.Is(err, client.ErrNotFound):
		code = exitNotFound
	case errors.As(err, &st) && st.Status >= 400 && st.Status < 500:
		code = exitRefused
	}
	fmt.Fprintf(stderr, "chronosctl: %v\n", err)
	return code
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
