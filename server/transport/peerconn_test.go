package transport

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/node"
)

// TestPeerWritesGoOverTheWorkersOwnConnection proves the batched queue of
// a peer, once SetPeers has set the Client up, is served over a
// connection its worker holds (peerconn.go), with the outcomes a
// transport's round trip gave: a lone request and a batch answered each
// with its own response; one connection for all while it stays up; a
// connection the peer closed while idle replaced, the request that found
// it closed sent again and answered; an answer later than the timeout a
// failure; and Close ending a round trip still waiting for its answer.
func TestPeerWritesGoOverTheWorkersOwnConnection(t *testing.T) {
	s := newNodeLock()
	arrived, release := make(chan struct{}, 1), make(chan struct{}, 1)
	core := &fakeCore{serial: s, t: t, respond: func(req node.Request, reply func(node.Response)) {
		switch req.URL {
		case "/timers/block":
			arrived <- struct{}{}
			go func() {
				<-release
				s.Do(func() { reply(node.Response{Status: 200}) })
			}()
			return
		case "/timers/never":
			arrived <- struct{}{}
			return
		}
		reply(node.Response{Status: 200, Header: node.Header{"X-Got": req.Header.Get(node.HeaderSignature)}, Body: req.Body})
	}}
	peer := httptest.NewUnstartedServer(NewHandler(core, s.Do, time.Minute, nil))
	var conns atomic.Int32
	peer.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	peer.Start()
	defer peer.Close()
	c := newClient(newNodeLock().Do, nil, oneBatchWorker(), newTransport(newDNSDialer().DialContext))
	c.SetPeers("127.0.0.1:0", nil)
	defer c.Close()
	done := make(chan peerOutcome, 8)
	var bodies sync.Map // target → the body the node was given
	send := func(target string, timeout time.Duration) {
		req := node.Request{Method: http.MethodPut, URL: peer.URL + target, Header: node.Header{node.HeaderSignature: "sig " + target}, Body: []byte(target)}
		c.Send(req, timeout, func(r node.Response, err error) {
			bodies.Store(target, r.Body)
			done <- peerOutcome{target, r.Status, r.Header.Get("X-Got") + " " + string(r.Body), err}
		})
	}
	answered := func(target string) {
		t.Helper()
		if o := chantest.Receive(t, done, "an outcome"); o.target != target || o.status != 200 || o.body != "sig "+target+" "+target || o.err != nil {
			t.Errorf("outcome %+v, want %s answered 200 with its own signature and body", o, target)
		}
	}
	send("/timers/block", chantest.Timeout)
	chantest.Receive(t, arrived, "the first request at the peer")
	c.mu.Lock()
	held := len(c.conns)
	c.mu.Unlock()
	if held != 1 {
		t.Errorf("%d connections held by the workers, want 1: the worker's own", held)
	}
	send("/timers/a", chantest.Timeout)
	send("/timers/b", chantest.Timeout)
	release <- struct{}{}
	if o := chantest.Receive(t, done, "the blocked request's outcome"); o.status != 200 || o.err != nil {
		t.Errorf("blocked request: %+v, want 200", o)
	}
	answered("/timers/a")
	answered("/timers/b")
	if st := c.Stats(); st.PeerBatches != 1 || st.PeerBatched != 2 || st.OK != 3 {
		t.Errorf("stats %+v, want 3 ok, 2 of them in one batch", st)
	}
	// A second batch, written and read into the bodies the first left to
	// the link, leaves the first's answers as they were.
	send("/timers/block", chantest.Timeout)
	chantest.Receive(t, arrived, "the second blocking request at the peer")
	send("/timers/x", chantest.Timeout)
	send("/timers/y", chantest.Timeout)
	release <- struct{}{}
	chantest.Receive(t, done, "the second blocked request's outcome")
	answered("/timers/x")
	answered("/timers/y")
	for _, target := range []string{"/timers/a", "/timers/b"} {
		if b, _ := bodies.Load(target); string(b.([]byte)) != target {
			t.Errorf("%s: body %q after the next batch, want %q", target, b, target)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the peer took %d connections, want 1", n)
	}

	peer.CloseClientConnections() // as a peer's idle timeout or restart does
	send("/timers/c", chantest.Timeout)
	answered("/timers/c")
	if n := conns.Load(); n != 2 {
		t.Errorf("the peer took %d connections, want 2: the closed one replaced", n)
	}

	send("/timers/never", 50*time.Millisecond)
	chantest.Receive(t, arrived, "the unanswered request at the peer")
	if o := chantest.Receive(t, done, "the unanswered request's outcome"); o.err == nil || !strings.Contains(o.err.Error(), "no response within 50ms") {
		t.Errorf("unanswered request: %+v (%v), want it failed after its timeout", o, o.err)
	}

	send("/timers/never", time.Hour)
	chantest.Receive(t, arrived, "the second unanswered request at the peer")
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	chantest.Receive(t, closed, "Close with a round trip waiting")
	select {
	case o := <-done:
		if !errors.Is(o.err, ErrClientClosed) {
			t.Errorf("round trip ended by Close: %+v, want ErrClientClosed", o)
		}
	default:
	}
}

// TestAppendHeadRefusesWhatHTTPCannotCarry proves a request line or field
// with a character HTTP/1.1 cannot carry is refused before anything is
// written, as net/http refuses it.
func TestAppendHeadRefusesWhatHTTPCannotCarry(t *testing.T) {
	ok := node.Request{Method: http.MethodPut, Header: node.Header{node.HeaderSignature: "s"}, Body: []byte("x")}
	got, err := appendHead(nil, "http://127.0.0.1:1", "/timers/a", ok)
	want := "PUT /timers/a HTTP/1.1\r\nHost: 127.0.0.1:1\r\n" + node.HeaderSignature + ": s\r\nContent-Length: 1\r\n\r\n"
	if err != nil || string(got) != want {
		t.Errorf("head %q, %v; want %q", got, err, want)
	}
	for _, r := range []struct {
		target string
		req    node.Request
	}{
		{"/timers/a b", ok},
		{"/timers/a", node.Request{Method: "P T"}},
		{"/timers/a", node.Request{Method: http.MethodPut, Header: node.Header{"X-A": "a\r\nX-B: b"}}},
		{"/timers/a", node.Request{Method: http.MethodPut, Header: node.Header{"X A": "a"}}},
		{"/timers/a", node.Request{Method: http.MethodPut, Header: node.Header{"Content-Length": "9"}}},
	} {
		if _, err := appendHead(nil, "http://127.0.0.1:1", r.target, r.req); err == nil {
			t.Errorf("target %q, request %+v: head written, want it refused", r.target, r.req)
		}
	}
}
