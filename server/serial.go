package server

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// Serial serializes every call into one node. The node is single-threaded
// (docs/design.md section 2) while the HTTP server, the client completions and the
// clock's alarms all run on goroutines of their own, so each of them enters
// the node only through Do.
//
// A panic inside the node is a broken invariant: Serial records it, refuses
// every later call and closes Failed, so the run loop can stop the process
// loudly instead of serving from a node in an unknown state.
type Serial struct {
	mu      sync.Mutex
	closed  bool
	failure error
	failed  chan struct{}
	once    sync.Once
}

// NewSerial returns an open Serial.
func NewSerial() *Serial {
	return &Serial{failed: make(chan struct{})}
}

// Do runs f under the node lock and reports whether it ran. After Close, or
// after an earlier f panicked, f is dropped and Do returns false: a late
// alarm or completion must not re-enter a stopped node. A panic in f is
// recorded and then re-raised on the caller's goroutine.
func (s *Serial) Do(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	defer func() {
		if v := recover(); v != nil {
			s.closed = true
			s.failure = fmt.Errorf("server: node panicked: %v\n%s", v, debug.Stack())
			s.once.Do(func() { close(s.failed) })
			panic(v)
		}
	}()
	f()
	return true
}

// Close makes every later Do a no-op. It waits for a running Do to finish.
func (s *Serial) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

// Failed is closed when a call into the node panicked.
func (s *Serial) Failed() <-chan struct{} { return s.failed }

// Err returns the recorded panic, or nil.
func (s *Serial) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}
