package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// maxSinkBody bounds what the sink reads of a callback, and
// maxSinkShown what it prints of it.
const (
	maxSinkBody  = wire.MaxBodyBytes
	maxSinkShown = 200
)

// sink is the callback endpoint of a local cluster: it answers every
// request 200 and prints one line for it, so that a timer created with
// the README's curl example is seen to pop.
type sink struct {
	addr string // where it listens
	srv  *http.Server
	done chan error
}

// startSink listens on addr and serves until stop is called, printing to
// out. The server runs each request's handler on a goroutine of its own,
// so each prints its line whole through out, which holds the lock, and
// shares no buffer with another.
func startSink(addr string, out *lines) (*sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("localcluster: sink: %w", err)
	}
	s := &sink{addr: ln.Addr().String(), done: make(chan error, 1), srv: &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { out.println("sink", describe(r)) }),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
	}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// describe is the sink's line for one callback: what a client of Chronos
// reads from a pop.
func describe(r *http.Request) string {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSinkBody+1))
	shown := string(body)
	switch {
	case err != nil:
		shown = "(body unreadable: " + err.Error() + ")"
	case len(body) > maxSinkBody:
		shown = fmt.Sprintf("(body over %d bytes)", maxSinkBody)
	case len(body) > maxSinkShown:
		shown = string(body[:maxSinkShown]) + "..."
	}
	return fmt.Sprintf("%s %s %s: %s %s: %s body: %s", r.Method, r.URL.RequestURI(),
		wire.HeaderSequenceNumber, r.Header.Get(wire.HeaderSequenceNumber),
		wire.HeaderTimerID, r.Header.Get(wire.HeaderTimerID), strconv.Quote(shown))
}

// stop closes the sink and waits for it.
func (s *sink) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
}
