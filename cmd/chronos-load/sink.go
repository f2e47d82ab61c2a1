package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// sink is the callback endpoint. It records, per timer the tool created
// (opaque "l<index>") and per pop of it (X-Sequence-Number 1..pops), how
// many times that pop arrived and when it first did, in flat slices of
// timers × pops counters so memory stays bounded. Baseline callbacks
// (opaque "b<index>") are only answered.
//
// With workers > 0 it models a slow endpoint: at most workers callbacks
// are served at a time, each taking service before its 200, and the rest
// wait in the handler, so its queue grows as a real one does. A pop is
// recorded when it is answered, after that wait: the node's deadline runs
// meanwhile, and a pop whose node gave up first is not a delivered one.
type sink struct {
	srv     *http.Server
	url     string
	pops    int
	count   []atomic.Int32 // index timer*pops + seq-1
	first   []atomic.Int64 // UnixNano of the first arrival of that pop
	total   atomic.Int64   // distinct (timer, seq) pairs seen
	stray   atomic.Int64   // pops of a timer with no or an out-of-range sequence number
	dropped atomic.Int64   // pops the node gave up on before the sink answered
	sem     chan struct{}  // nil: answer at once
	service time.Duration
}

func newSink(timers, pops, workers int, service time.Duration) *sink {
	s := &sink{pops: pops, count: make([]atomic.Int32, timers*pops), first: make([]atomic.Int64, timers*pops), service: service}
	if workers > 0 {
		s.sem = make(chan struct{}, workers)
	}
	return s
}

func startSink(timers, pops, workers int, service time.Duration) (*sink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := newSink(timers, pops, workers, service)
	s.url = "http://" + l.Addr().String() + "/cb"
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64))
	if !s.work(r.Context()) {
		s.dropped.Add(1)
		return
	}
	now := time.Now().UnixNano()
	w.WriteHeader(http.StatusOK)
	if len(body) < 2 || body[0] != 'l' {
		return
	}
	i, err := strconv.Atoi(string(body[1:]))
	if err != nil || i < 0 || i >= len(s.count)/s.pops {
		return
	}
	seq, err := strconv.Atoi(r.Header.Get(wire.HeaderSequenceNumber))
	if err != nil || seq < 1 || seq > s.pops {
		s.stray.Add(1)
		return
	}
	k := i*s.pops + seq - 1
	if s.count[k].Add(1) == 1 {
		s.total.Add(1)
	}
	s.first[k].CompareAndSwap(0, now)
}

// work waits for a worker and spends the service time, and reports
// whether the caller is still there to be answered.
func (s *sink) work(ctx context.Context) bool {
	if s.sem == nil {
		return true
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer func() { <-s.sem }()
	t := time.NewTimer(s.service)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// slow reports whether the sink models a slow endpoint, and how long it
// needs to serve n callbacks at its full rate.
func (s *sink) slow(n int) (bool, time.Duration) {
	if s.sem == nil {
		return false, 0
	}
	return true, time.Duration(int64(n) * int64(s.service) / int64(cap(s.sem)))
}

// popped is how many (timer, seq) pops have arrived at least once.
func (s *sink) popped() int { return int(s.total.Load()) }

func (s *sink) close() { _ = s.srv.Shutdown(context.Background()) }
