package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/client"
)

// Limits of the callback sink's HTTP server.
const (
	sinkReadHeaderTimeout = 5 * time.Second
	sinkShutdownTimeout   = 5 * time.Second
)

// watch serves a callback sink with a client.Handler and prints each pop
// as it arrives, until ctx ends or -count pops have arrived.
func watch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve the callback sink on (port 0: any free port)")
	count := fs.Int("count", 0, "exit after this many pops (0: run until interrupted)")
	if _, err := parse(fs, args, 0, "no arguments, only flags"); err != nil {
		return err
	}
	if *count < 0 {
		return fmt.Errorf("%w: watch: -count %d is negative", errUsage, *count)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("chronosctl: watch: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	p := &printer{out: stdout, left: *count, done: stop}
	cfg := client.DefaultHandlerConfig()
	cfg.OnDuplicate = func(pop client.Pop) {
		fmt.Fprintf(stderr, "dropped a duplicate: timer=%s seq=%d\n", pop.Timer, pop.Seq)
	}
	h, err := client.NewHandler(cfg, p.print)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: sinkReadHeaderTimeout}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "callback uri: http://%s/\n", ln.Addr())

	select {
	case <-ctx.Done():
	case err = <-served:
		return fmt.Errorf("chronosctl: watch: %w", err)
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), sinkShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("chronosctl: watch: %w", err)
	}
	return nil
}

// printer prints pops, one line each, and ends the watch after left pops
// when left was set.
type printer struct {
	mu   sync.Mutex
	out  io.Writer
	left int
	done func()
}

func (p *printer) print(_ context.Context, pop client.Pop) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := fmt.Fprintf(p.out, "%s pop timer=%s seq=%d opaque=%q\n",
		time.Now().UTC().Format(time.RFC3339Nano), pop.Timer, pop.Seq, pop.Opaque); err != nil {
		return err
	}
	if p.left > 0 {
		if p.left--; p.left == 0 {
			p.done()
		}
	}
	return nil
}
