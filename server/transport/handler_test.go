package transport

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/internal/logtest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// nodeLock stands in for the server's Serial, through which the Handler
// and the Client enter the node: Do runs f under one lock, refuses it once
// closed, and after a panic in f records it, re-raises it and refuses
// every later f.
type nodeLock struct {
	mu       sync.Mutex
	closed   bool
	panicked any
}

func newNodeLock() *nodeLock { return &nodeLock{} }

func (l *nodeLock) Do(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	defer func() {
		if v := recover(); v != nil {
			l.closed, l.panicked = true, v
			panic(v)
		}
	}()
	f()
	return true
}

// Close makes every later Do a no-op.
func (l *nodeLock) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

// Panicked returns the recorded panic, or nil.
func (l *nodeLock) Panicked() any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.panicked
}

// fakeCore is a node stand-in: it records requests and answers with respond,
// which may keep the reply for later.
type fakeCore struct {
	serial  *nodeLock
	t       *testing.T
	respond func(req node.Request, reply func(node.Response))
	mu      sync.Mutex
	got     []node.Request
}

func (c *fakeCore) Handle(req node.Request, reply func(node.Response)) {
	assertLocked(c.t, c.serial, "Handle")
	c.mu.Lock()
	c.got = append(c.got, req)
	c.mu.Unlock()
	c.respond(req, reply)
}

func (c *fakeCore) requests() []node.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]node.Request(nil), c.got...)
}

// assertLocked fails unless the node lock is held: TryLock succeeding means
// the call came in outside nodeLock.Do.
func assertLocked(t *testing.T, l *nodeLock, what string) {
	if l.mu.TryLock() {
		l.mu.Unlock()
		t.Errorf("%s ran without the node lock", what)
	}
}

// TestHandlerRoundTrip proves the HTTP to node conversion both ways: method,
// request target, canonical and joined headers, body; then status, headers
// and body of the reply.
func TestHandlerRoundTrip(t *testing.T) {
	s := newNodeLock()
	core := &fakeCore{serial: s, t: t, respond: func(req node.Request, reply func(node.Response)) {
		h := node.Header{}
		h.Set(wire.HeaderLocation, "/timers/0123")
		reply(node.Response{Status: http.StatusOK, Header: h, Body: []byte("done")})
	}}
	srv := httptest.NewServer(NewHandler(core, s.Do, chantest.Timeout, nil))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/timers/abc?x=y", strings.NewReader(`{"a":1}`))
	req.Header["x-custom"] = []string{"one"}
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "done" || resp.Header.Get("Location") != "/timers/0123" {
		t.Errorf("response = %d %q Location %q, want 200 \"done\" /timers/0123", resp.StatusCode, body, resp.Header.Get("Location"))
	}
	got := core.requests()
	if len(got) != 1 {
		t.Fatalf("node got %d requests, want 1", len(got))
	}
	r := got[0]
	if r.Method != http.MethodPost || r.URL != "/timers/abc?x=y" || string(r.Body) != `{"a":1}` {
		t.Errorf("node request = %s %s %q, want POST /timers/abc?x=y {\"a\":1}", r.Method, r.URL, r.Body)
	}
	if r.Header["X-Custom"] != "one" || r.Header["X-Multi"] != "a, b" {
		t.Errorf("node headers = %v, want X-Custom one and X-Multi \"a, b\"", r.Header)
	}
}

// TestHandlerOversizedBody proves that a body over wire.MaxBodyBytes gets 413
// with a Reason, whether its length is declared or streamed, and never
// reaches the node.
func TestHandlerOversizedBody(t *testing.T) {
	s := newNodeLock()
	core := &fakeCore{serial: s, t: t, respond: func(_ node.Request, reply func(node.Response)) {
		reply(node.Response{Status: http.StatusOK})
	}}
	srv := httptest.NewServer(NewHandler(core, s.Do, chantest.Timeout, nil))
	defer srv.Close()
	big := bytes.Repeat([]byte("x"), wire.MaxBodyBytes+1)
	for _, declared := range []bool{true, false} {
		var body io.Reader = bytes.NewReader(big)
		if !declared {
			body = io.MultiReader(body) // hides the length: chunked
		}
		resp, err := http.Post(srv.URL+"/timers", "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(resp.Header.Get("Reason"), "larger than") {
			t.Errorf("declared=%v: response = %d Reason %q, want 413 with a Reason", declared, resp.StatusCode, resp.Header.Get("Reason"))
		}
	}
	exact := bytes.Repeat([]byte("x"), wire.MaxBodyBytes)
	resp, err := http.Post(srv.URL+"/timers", "application/json", bytes.NewReader(exact))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("body of exactly MaxBodyBytes: status %d, want 200", resp.StatusCode)
	}
	if got := len(core.requests()); got != 1 {
		t.Errorf("node got %d requests, want only the one within the limit", got)
	}
}

// TestHandlerLateReply proves that a reply the node gives later, from a
// completion under the lock, reaches the client.
func TestHandlerLateReply(t *testing.T) {
	s := newNodeLock()
	replies := make(chan func(node.Response), 1)
	core := &fakeCore{serial: s, t: t, respond: func(_ node.Request, reply func(node.Response)) { replies <- reply }}
	srv := httptest.NewServer(NewHandler(core, s.Do, chantest.Timeout, nil))
	defer srv.Close()
	go func() {
		reply := <-replies
		s.Do(func() { reply(node.Response{Status: http.StatusAccepted}) })
	}()
	resp, err := http.Get(srv.URL + "/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("status = %d, want 202", resp.StatusCode)
	}
}

// TestHandlerNoReply proves the ceiling: a node that never replies yields
// 503 with Retry-After, not a hung request.
func TestHandlerNoReply(t *testing.T) {
	s := newNodeLock()
	core := &fakeCore{serial: s, t: t, respond: func(node.Request, func(node.Response)) {}}
	rec := httptest.NewRecorder()
	NewHandler(core, s.Do, time.Millisecond, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ping", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("response = %d Retry-After %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestHandlerClientGone proves that a client going away releases the
// handler, and that the node's late reply then neither blocks nor panics.
func TestHandlerClientGone(t *testing.T) {
	s := newNodeLock()
	replies := make(chan func(node.Response), 1)
	core := &fakeCore{serial: s, t: t, respond: func(_ node.Request, reply func(node.Response)) { replies <- reply }}
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodGet, "/ping", nil).WithContext(ctx)
	served := make(chan struct{})
	go func() {
		NewHandler(core, s.Do, chantest.Timeout, nil).ServeHTTP(httptest.NewRecorder(), req)
		close(served)
	}()
	reply := chantest.Receive(t, replies, "request at the node")
	cancel()
	chantest.Receive(t, served, "handler return")
	s.Do(func() { reply(node.Response{Status: http.StatusOK}) })
}

// TestHandlerStoppedNode proves that requests after shutdown get 503.
func TestHandlerStoppedNode(t *testing.T) {
	s := newNodeLock()
	s.Close()
	core := &fakeCore{serial: s, t: t, respond: func(node.Request, func(node.Response)) { t.Error("stopped node entered") }}
	rec := httptest.NewRecorder()
	NewHandler(core, s.Do, chantest.Timeout, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ping", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status = %d, want 503", rec.Code)
	}
}

// TestHandlerReplyTwice proves that a reply the node sends a second time,
// after its request was answered and the Handler has served others, is
// logged and reaches no later request: the Handler reuses what a request
// used, but each reply function is bound to its own request.
func TestHandlerReplyTwice(t *testing.T) {
	s := newNodeLock()
	var kept []func(node.Response)
	core := &fakeCore{serial: s, t: t, respond: func(req node.Request, reply func(node.Response)) {
		for _, old := range kept {
			old(node.Response{Status: http.StatusTeapot}) // the node's bug
		}
		kept = append(kept, reply)
		reply(node.Response{Status: http.StatusOK, Body: []byte(req.URL)})
	}}
	var logs logtest.Buffer
	h := NewHandler(core, s.Do, chantest.Timeout, slog.New(slog.NewJSONHandler(&logs, nil)))
	for i, path := range []string{"/ping", "/timers/a", "/timers/b"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || rec.Body.String() != path {
			t.Errorf("request %d: response %d %q, want 200 %q", i, rec.Code, rec.Body.String(), path)
		}
	}
	if got := strings.Count(logs.String(), `"msg":"node replied twice"`); got != 3 {
		t.Errorf("%d replies logged as second ones, want 3 (one, then two)\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), `"url":"/ping"`) {
		t.Errorf("log %s, want the second reply named by its own request's URL", logs.String())
	}
}

// TestHandlerReusedCallsKeepReplyHeaders proves that the header values of
// a reply, backed by its pooled call's array, reach that reply's client
// intact while the calls are reused by other requests at once, with
// replies of more and fewer fields than the array held before.
func TestHandlerReusedCallsKeepReplyHeaders(t *testing.T) {
	s := newNodeLock()
	core := &fakeCore{serial: s, t: t, respond: func(req node.Request, reply func(node.Response)) {
		n := len(req.URL) % 7 // 0 to 6 fields of its own
		h := node.Header{}
		for i := range n {
			h.Set("X-Field-"+string(rune('a'+i)), req.URL)
		}
		reply(node.Response{Status: http.StatusOK, Header: h, Body: []byte(req.URL)})
	}}
	srv := httptest.NewServer(NewHandler(core, s.Do, chantest.Timeout, nil))
	defer srv.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				path := "/t/" + strings.Repeat("x", (g*50+i)%13)
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := len(path) % 7
				got := 0
				for k, v := range resp.Header {
					if strings.HasPrefix(k, "X-Field-") {
						got++
						if len(v) != 1 || v[0] != path {
							t.Errorf("%s: %s = %q, want %q", path, k, v, path)
						}
					}
				}
				if got != want || string(body) != path || resp.Header.Get("Content-Length") != strconv.Itoa(len(path)) {
					t.Errorf("%s: %d fields, body %q, Content-Length %q: want %d, %q, %d", path, got, body, resp.Header.Get("Content-Length"), want, path, len(path))
				}
			}
		})
	}
	wg.Wait()
}
