package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// sink is the callback endpoint: it answers 200 at once and records, per
// timer the tool created (opaque "l<index>"), how many pops arrived and
// when the first did. Baseline callbacks (opaque "b<index>") are only
// answered.
type sink struct {
	srv   *http.Server
	url   string
	count []atomic.Int32
	first []atomic.Int64 // UnixNano of the first pop
	total atomic.Int64
}

func startSink(timers int) (*sink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{url: "http://" + l.Addr().String() + "/cb", count: make([]atomic.Int32, timers), first: make([]atomic.Int64, timers)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64))
	w.WriteHeader(http.StatusOK)
	if len(body) < 2 || body[0] != 'l' {
		return
	}
	i, err := strconv.Atoi(string(body[1:]))
	if err != nil || i < 0 || i >= len(s.count) {
		return
	}
	if s.count[i].Add(1) == 1 {
		s.total.Add(1)
	}
	s.first[i].CompareAndSwap(0, now)
}

// popped is how many of the tool's timers have popped at least once.
func (s *sink) popped() int { return int(s.total.Load()) }

func (s *sink) close() { _ = s.srv.Shutdown(context.Background()) }
