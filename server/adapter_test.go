package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/transport"
)

// coreFunc is a node stand-in that answers each request with itself.
type coreFunc func(req node.Request, reply func(node.Response))

func (f coreFunc) Handle(req node.Request, reply func(node.Response)) { f(req, reply) }

// assertLocked fails unless the node lock is held: TryLock succeeding means
// the call came in outside Serial.Do.
func assertLocked(t *testing.T, s *Serial, what string) {
	if s.mu.TryLock() {
		s.mu.Unlock()
		t.Errorf("%s ran without the node lock", what)
	}
}

// TestSerialCloseDropsCalls proves that after Close nothing enters the node.
func TestSerialCloseDropsCalls(t *testing.T) {
	s := NewSerial()
	ran := false
	if !s.Do(func() { ran = true }) || !ran {
		t.Fatalf("Do on an open Serial did not run")
	}
	s.Close()
	if s.Do(func() { t.Error("ran after Close") }) {
		t.Errorf("Do after Close = true, want false")
	}
}

// TestSerialPanicStopsNode proves that a panic in the node is re-raised,
// recorded, signalled on Failed, and that the node is not entered again.
func TestSerialPanicStopsNode(t *testing.T) {
	s := NewSerial()
	func() {
		defer func() {
			if v := recover(); v != "broken invariant" {
				t.Errorf("recovered %v, want the node's panic", v)
			}
		}()
		s.Do(func() { panic("broken invariant") })
	}()
	chantest.Receive(t, s.Failed(), "Failed signal")
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "server: node panicked: broken invariant") {
		t.Errorf("Err() = %v, want the recorded panic", err)
	}
	if s.Do(func() { t.Error("ran after a panic") }) {
		t.Errorf("Do after a panic = true, want false")
	}
}

// TestClockAlarmUnderLock proves that alarms read the injected clock and
// fire through the Serial.
func TestClockAlarmUnderLock(t *testing.T) {
	mock := clock.NewMock()
	s := NewSerial()
	c := NewClock(mock, s)
	if got, want := c.Now(), mock.Now(); !got.Equal(want) {
		t.Errorf("Now() = %v, want %v", got, want)
	}
	fired := make(chan struct{})
	c.AfterFunc(time.Second, func() {
		assertLocked(t, s, "alarm")
		close(fired)
	})
	stopped := c.AfterFunc(time.Second, func() { t.Error("stopped alarm fired") })
	if !stopped.Stop() {
		t.Errorf("Stop() = false, want true for a pending alarm")
	}
	mock.Add(time.Second)
	chantest.Receive(t, fired, "alarm")
}

// TestSerializedCalls proves that inbound requests, alarms and network
// completions arriving at once never enter the node concurrently. The
// counter is a plain int on purpose: under -race any overlap is reported.
func TestSerializedCalls(t *testing.T) {
	s := NewSerial()
	var inside atomic.Int32
	calls := 0
	enter := func() {
		if inside.Add(1) != 1 {
			t.Error("two calls inside the node at once")
		}
		calls++
		inside.Add(-1)
	}
	core := coreFunc(func(_ node.Request, reply func(node.Response)) {
		assertLocked(t, s, "Handle")
		enter()
		reply(node.Response{Status: http.StatusOK})
	})
	srv := httptest.NewServer(transport.NewHandler(core, s.Do, chantest.Timeout, nil))
	defer srv.Close()
	clk := NewClock(clock.New(), s)
	client := transport.NewClient(s.Do, prometheus.NewRegistry(), nil)
	defer client.Close()

	const n = 50
	done := make(chan struct{}, 3*n)
	for range n {
		clk.AfterFunc(0, func() { enter(); done <- struct{}{} })
		client.Send(node.Request{Method: http.MethodGet, URL: srv.URL + "/ping"}, chantest.Timeout, func(node.Response, error) {
			assertLocked(t, s, "completion")
			enter()
			done <- struct{}{}
		})
		go func() {
			resp, err := http.Get(srv.URL + "/ping")
			if err == nil {
				resp.Body.Close()
			}
			done <- struct{}{}
		}()
	}
	for range 3 * n {
		chantest.Receive(t, done, "call")
	}
	s.Do(func() {
		// Each client Send also reached the node as an inbound request.
		if want := 4 * n; calls != want {
			t.Errorf("calls = %d, want %d", calls, want)
		}
	})
}
