package transport

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// noTransport fails every round trip given to it: a Client whose rt it
// is proves a request went over a worker's own connection.
type noTransport struct{}

func (noTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("sent through the Transport")
}

// directClient is a Client as NewClient makes it, but for its Transport,
// which fails every request: what succeeds went direct.
func directClient(t *testing.T) *Client {
	t.Helper()
	c := NewClient(newNodeLock().Do, prometheus.NewRegistry(), nil)
	c.rt = noTransport{}
	t.Cleanup(c.Close)
	return c
}

// callback sends a callback of timer 1, pop seq, to url through c, and
// waits for its outcome.
func callback(t *testing.T, c *Client, url string, seq string, timeout time.Duration) outcome {
	t.Helper()
	ch := make(chan outcome, 1)
	h := node.Header{}
	h.Set(wire.HeaderSequenceNumber, seq)
	h.Set(wire.HeaderTimerID, "0001")
	c.Send(node.Request{Method: http.MethodPost, URL: url, Header: h, Body: []byte("opaque")}, timeout,
		func(resp node.Response, err error) { ch <- outcome{resp, err} })
	return chantest.Receive(t, ch, "completion of "+url)
}

// countConns starts s, counting the connections it accepts.
func countConns(s *httptest.Server) *atomic.Int64 {
	var opened atomic.Int64
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	s.Start()
	return &opened
}

// TestCallbacksGoOverTheWorkersOwnConnection proves a callback to an
// http:// URL is written by its worker on a connection of its own, as the
// Transport wrote it (method, target, Host, the node's header fields,
// Content-Length and body), its response read back (an interim 103 passed
// over, a chunked body read to its end), and the connection kept for the
// next callbacks: one connection for them all.
func TestCallbacksGoOverTheWorkersOwnConnection(t *testing.T) {
	peer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.RequestURI() != "/cb?q=1" || r.Host != r.Context().Value(http.LocalAddrContextKey).(net.Addr).String() ||
			string(body) != "opaque" || r.ContentLength != 6 || r.Header.Get(wire.HeaderTimerID) != "0001" || r.Header.Get(wire.HeaderSequenceNumber) == "" {
			t.Errorf("peer got %s %s Host %q %q (length %d) header %v", r.Method, r.URL.RequestURI(), r.Host, body, r.ContentLength, r.Header)
		}
		w.Header().Set("Location", "/x")
		if r.Header.Get(wire.HeaderSequenceNumber) == "2" {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, "rep")
			w.(http.Flusher).Flush() // chunked: no length known
			_, _ = io.WriteString(w, "ly")
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "reply")
	}))
	opened := countConns(peer)
	defer peer.Close()
	c := directClient(t)
	// One worker: a callback sent while the worker that answered the
	// last has not yet gone back to the queue starts a second worker,
	// with a connection of its own (seen under load), and the count
	// below is of one worker's connections.
	c.limits.workers = 1
	for _, seq := range []string{"1", "2", "3", "4"} {
		o := callback(t, c, peer.URL+"/cb?q=1#frag", seq, chantest.Timeout)
		if o.err != nil || o.resp.Status != http.StatusCreated || string(o.resp.Body) != "reply" || o.resp.Header.Get("Location") != "/x" {
			t.Errorf("callback %s: %d %q Location %q err %v, want 201 \"reply\" /x nil", seq, o.resp.Status, o.resp.Body, o.resp.Header.Get("Location"), o.err)
		}
	}
	if n := opened.Load(); n != 1 {
		t.Errorf("%d connections opened for 4 callbacks in turn, want 1", n)
	}
}

// TestDirectCallbackFailures proves that, over a worker's own
// connection, a timeout, a refused connection and an oversized response
// each come back as the Transport's did, and a redirect as itself; and
// that a connection the server ends ("Connection: close") is dialed anew
// for the next callback.
func TestDirectCallbackFailures(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	peer := httptest.NewUnstartedServer(failingPeer(release))
	opened := countConns(peer)
	defer peer.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	c := directClient(t)
	for _, tt := range []struct {
		url     string
		timeout time.Duration
		want    string
	}{
		{peer.URL + "/slow", 10 * time.Millisecond, "deadline exceeded"},
		{closed.URL + "/cb", chantest.Timeout, "server: Post"},
		{peer.URL + "/big", chantest.Timeout, "response body larger than"},
	} {
		if o := callback(t, c, tt.url, "1", tt.timeout); o.err == nil || !strings.Contains(o.err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.url, o.err, tt.want)
		}
	}
	if o := callback(t, c, peer.URL+"/redirect", "1", chantest.Timeout); o.err != nil || o.resp.Status != http.StatusFound {
		t.Errorf("redirect: status %d err %v, want 302 and no error", o.resp.Status, o.err)
	}
	// The first goes over the connection the redirect's answer kept;
	// each later one, after a "Connection: close", over a new one.
	before := opened.Load()
	for _, path := range []string{"/close", "/close", "/close", "/cb"} {
		if o := callback(t, c, peer.URL+path, "1", chantest.Timeout); o.err != nil || o.resp.Status != http.StatusOK {
			t.Errorf("%s: status %d err %v, want 200 and no error", path, o.resp.Status, o.err)
		}
	}
	if n := opened.Load() - before; n != 3 {
		t.Errorf("%d connections opened after 3 callbacks answered with Connection: close, want 3", n)
	}
}

// TestDirectConnectionClosedWhileIdleIsDialedAnew proves a kept
// connection the server closed while it was idle (its idle timeout) is
// not written to: the next callback, checked before it is sent, goes over
// a new connection and succeeds.
func TestDirectConnectionClosedWhileIdleIsDialedAnew(t *testing.T) {
	old := directIdleCheck
	directIdleCheck = 0 // every reuse is checked
	defer func() { directIdleCheck = old }()
	closedConn := make(chan struct{}, 4)
	var opened atomic.Int64
	peer := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	peer.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			opened.Add(1)
		case http.StateClosed:
			closedConn <- struct{}{}
		}
	}
	peer.Config.IdleTimeout = time.Millisecond
	peer.Start()
	defer peer.Close()
	c := directClient(t)
	for i := range 3 {
		if o := callback(t, c, peer.URL+"/cb", "1", chantest.Timeout); o.err != nil || o.resp.Status != http.StatusOK {
			t.Fatalf("callback %d: status %d err %v, want 200 and no error", i, o.resp.Status, o.err)
		}
		chantest.Receive(t, closedConn, "the server's close of the idle connection")
	}
	if n := opened.Load(); n != 3 {
		t.Errorf("%d connections for 3 callbacks, each closed idle, want 3", n)
	}
}

// TestCloseAbortsADirectCallback proves Close ends a callback still
// waiting for its answer over a worker's own connection at once, failed
// as the Client's closing, not at its timeout.
func TestCloseAbortsADirectCallback(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	peer := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer peer.Close()
	c := NewClient(newNodeLock().Do, prometheus.NewRegistry(), nil)
	c.rt = noTransport{}
	ch := make(chan outcome, 1)
	h := node.Header{}
	h.Set(wire.HeaderTimerID, "0001")
	c.Send(node.Request{Method: http.MethodPost, URL: peer.URL + "/cb", Header: h}, time.Hour,
		func(resp node.Response, err error) { ch <- outcome{resp, err} })
	chantest.Receive(t, arrived, "the callback at the sink")
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	chantest.Receive(t, closed, "Close's return")
	if o := chantest.Receive(t, ch, "the callback's outcome"); !errors.Is(o.err, ErrClientClosed) {
		t.Errorf("outcome err %v, want ErrClientClosed", o.err)
	}
}

// TestDirectTarget proves which callback URLs go over a worker's own
// connection, with what Host and request target; the rest go through the
// Transport, which escapes and authenticates as net/http does.
func TestDirectTarget(t *testing.T) {
	for url, want := range map[string]string{
		"http://127.0.0.1:8080/cb?a=1":   "127.0.0.1:8080 /cb?a=1",
		"http://sink.example/a/b":        "sink.example /a/b",
		"http://[::1]:80":                "[::1]:80 /",
		"http://h:1?q=x":                 "h:1 /?q=x",
		"http://h:1/p#frag":              "h:1 /p",
		"http://h:1/%41":                 "h:1 /%41",
		"https://h:1/cb":                 "",
		"http://user:pw@h:1/cb":          "",
		"http://h:1/a b":                 "",
		"http://h:1/caf\u00e9":           "",
		"http://[fe80::1%25eth0]:80/cb":  "",
		"http:///cb":                     "",
		"HTTP://h:1/cb":                  "",
		"http://h:1/a\"b":                "",
		"http://h:1/{x}":                 "",
		"http://h:1/\r\nX-Injected: yes": "",
	} {
		got := ""
		if host, target, ok := directTarget(url); ok {
			got = host + " " + target
		}
		if got != want {
			t.Errorf("directTarget(%q) = %q, want %q", url, got, want)
		}
	}
}

// TestOnlyPlainCallbacksGoDirect proves what goes through the Transport
// instead: a request between nodes, a method other than POST, and a
// header field that could not be written as it is (net/http refuses it
// there, with its own error).
func TestOnlyPlainCallbacksGoDirect(t *testing.T) {
	c := NewClient(newNodeLock().Do, prometheus.NewRegistry(), nil)
	defer c.Close()
	cb := func(method string, h node.Header) *job {
		req := node.Request{Method: method, URL: "http://127.0.0.1:9/cb", Header: h}
		return &job{req: req, kind: kindOf(req)}
	}
	for name, tt := range map[string]struct {
		j    *job
		want bool
	}{
		"callback":         {cb(http.MethodPost, node.Header{wire.HeaderTimerID: "1"}), true},
		"to a peer":        {cb(http.MethodPost, node.Header{}), false},
		"GET":              {cb(http.MethodGet, node.Header{wire.HeaderTimerID: "1"}), false},
		"CRLF in a value":  {cb(http.MethodPost, node.Header{wire.HeaderTimerID: "1\r\nX: y"}), false},
		"space in a name":  {cb(http.MethodPost, node.Header{wire.HeaderTimerID: "1", "A b": "c"}), false},
		"a Host field":     {cb(http.MethodPost, node.Header{wire.HeaderTimerID: "1", "Host": "x"}), false},
		"a Content-Length": {cb(http.MethodPost, node.Header{wire.HeaderTimerID: "1", "Content-Length": "9"}), false},
	} {
		if got := c.callbackDirect(tt.j); got != tt.want {
			t.Errorf("%s: direct = %v, want %v", name, got, tt.want)
		}
	}
}
