package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// fakeNodes is a transport that hands each request to the answer function
// of the node it is addressed to, and records every request.
type fakeNodes struct {
	mu     sync.Mutex
	answer map[string]func(*http.Request) (*http.Response, error)
	sent   []sent
}

// sent is one request as a node received it.
type sent struct {
	node, method, path, body string
}

func (f *fakeNodes) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	f.mu.Lock()
	f.sent = append(f.sent, sent{r.URL.Host, r.Method, r.URL.Path, string(body)})
	answer := f.answer[r.URL.Host]
	f.mu.Unlock()
	return answer(r)
}

func (f *fakeNodes) requests() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.sent...)
}

// reply answers with status, the given header pairs, and a plain body.
func reply(status int, body string, header ...string) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
}

// located answers a PUT 200 with the Location a node gives: the path's
// unique ID with the bloom filter bloom.
func located(bloom string) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		id := strings.TrimPrefix(r.URL.Path, "/timers/")
		return reply(200, "", "Location", "/timers/"+id[:16]+bloom)(r)
	}
}

var errRefused = errors.New("dial tcp: connection refused")

func refused(*http.Request) (*http.Response, error) { return nil, errRefused }

// hang never answers: the request waits until its context ends.
func hang(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

func newFakeClient(t *testing.T, f *fakeNodes, opts ...Option) *Client {
	t.Helper()
	c, err := New([]string{"a:1", "b:1", "c:1"}, append([]Option{WithHTTPClient(&http.Client{Transport: f})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var testTimer = Timer{Interval: time.Second, URI: "http://127.0.0.1:9/cb", Opaque: "x"}

// TestCreateIsIdempotentAcrossFailover proves that a create whose first
// answer is lost is sent again, to the next node, as the same PUT of the
// same chosen ID and body, so that it cannot make a second timer; that
// Create returns the ID of the node's Location; and that the next call
// starts at the node that answered.
func TestCreateIsIdempotentAcrossFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNodes{answer: map[string]func(*http.Request) (*http.Response, error){
			"a:1": func(r *http.Request) (*http.Response, error) { return nil, io.ErrUnexpectedEOF }, // applied, answer lost
			"b:1": located("00000000000000ff"),
			"c:1": refused,
		}}
		c := newFakeClient(t, f)
		id, err := c.Create(t.Context(), testTimer)
		if err != nil {
			t.Fatal(err)
		}
		got := f.requests()
		if len(got) != 2 || got[0].node != "a:1" || got[1].node != "b:1" {
			t.Fatalf("requests %+v, want a:1 then b:1", got)
		}
		if got[0].method != "PUT" || got[0].path != got[1].path || got[0].body != got[1].body {
			t.Errorf("retry %+v differs from first try %+v, want the same PUT", got[1], got[0])
		}
		if want := ID(strings.TrimPrefix(got[0].path, "/timers/")[:16] + "00000000000000ff"); id != want {
			t.Errorf("Create = %s, want %s from Location", id, want)
		}
		if err := c.Delete(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		if last := f.requests()[2]; last.node != "b:1" || last.method != "DELETE" || last.path != "/timers/"+string(id) {
			t.Errorf("next call %+v, want DELETE /timers/%s on b:1, the node that answered", last, id)
		}
	})
}

// TestRetryAfterHonoured proves that after a 503 the client waits at
// least the node's Retry-After before the next attempt, and at most the
// backoff bound plus it, on the simulated clock of a synctest bubble.
func TestRetryAfterHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNodes{answer: map[string]func(*http.Request) (*http.Response, error){
			"a:1": reply(503, "no reply within 10s", "Retry-After", "3", "Reason", "no reply within 10s"),
			"b:1": reply(200, ""),
		}}
		c := newFakeClient(t, f)
		start := time.Now()
		if err := c.Delete(t.Context(), "0123456789abcdef0123456789abcdef"); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 3*time.Second || waited > 3*time.Second+DefaultBackoffMin {
			t.Errorf("waited %v between attempts, want 3s (Retry-After) to 3s+%v", waited, DefaultBackoffMin)
		}
		if n := len(f.requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
}

// TestBadRequestNeverRetried proves that a 400 ends the call at once with
// an error that matches ErrBadRequest and carries the node's reason.
func TestBadRequestNeverRetried(t *testing.T) {
	f := &fakeNodes{answer: map[string]func(*http.Request) (*http.Response, error){
		"a:1": reply(400, "timing.interval is missing", "Reason", "timing.interval is missing"),
	}}
	c := newFakeClient(t, f)
	_, err := c.Update(t.Context(), "0123456789abcdef0123456789abcdef", testTimer)
	var st *StatusError
	if !errors.Is(err, ErrBadRequest) || !errors.As(err, &st) || st.Reason != "timing.interval is missing" {
		t.Fatalf("Update = %v, want ErrBadRequest with the reason", err)
	}
	if errors.Is(err, ErrAllNodesFailed) || errors.Is(err, ErrUnavailable) {
		t.Errorf("Update = %v, matches a retry sentinel", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests, want 1: a 400 is never retried", n)
	}
}

// TestAllNodesFailed proves that when every attempt gets a 503 the call
// makes exactly Attempts attempts, rotating through the nodes, and fails
// with an error matching ErrAllNodesFailed and, through the last failure,
// ErrUnavailable.
func TestAllNodesFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNodes{answer: map[string]func(*http.Request) (*http.Response, error){
			"a:1": reply(503, "busy", "Retry-After", "1"),
			"b:1": refused,
			"c:1": reply(503, "busy", "Retry-After", "1"),
		}}
		c := newFakeClient(t, f)
		err := c.Delete(t.Context(), "0123456789abcdef0123456789abcdef")
		var all *AllFailedError
		if !errors.Is(err, ErrAllNodesFailed) || !errors.Is(err, ErrUnavailable) || !errors.As(err, &all) || all.Attempts != 6 {
			t.Fatalf("Delete = %v, want ErrAllNodesFailed after 6 attempts, last ErrUnavailable", err)
		}
		var order []string
		for _, r := range f.requests() {
			order = append(order, r.node)
		}
		if got := strings.Join(order, " "); got != "a:1 b:1 c:1 a:1 b:1 c:1" {
			t.Errorf("attempts on %s, want two rounds of a:1 b:1 c:1", got)
		}
	})
}

// TestAttemptTimeout proves that a node that never answers costs one
// AttemptTimeout and the call moves on to the next node, and that the
// error of a call whose every attempt timed out says so.
func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNodes{answer: map[string]func(*http.Request) (*http.Response, error){
			"a:1": hang,
			"b:1": reply(200, ""),
		}}
		c := newFakeClient(t, f, WithAttemptTimeout(5*time.Second))
		start := time.Now()
		if err := c.Delete(t.Context(), "0123456789abcdef0123456789abcdef"); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 5*time.Second || waited > 5*time.Second+DefaultBackoffMin {
			t.Errorf("call took %v, want one attempt timeout (5s) and a backoff", waited)
		}
		f.answer["b:1"], f.answer["c:1"] = hang, hang
		err := c.Delete(t.Context(), "0123456789abcdef0123456789abcdef")
		if !errors.Is(err, ErrAllNodesFailed) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Delete = %v, want ErrAllNodesFailed wrapping a deadline", err)
		}
	})
}

// TestCallerContextEndsRetries proves that the caller's context bounds the
// whole call: once it ends, the client stops retrying and returns its
// error, not ErrAllNodesFailed.
func TestCallerContextEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNodes{answer: map[string]func(*http.Request) (*http.Response, error){
			"a:1": reply(503, "busy", "Retry-After", "5"),
			"b:1": reply(503, "busy", "Retry-After", "5"),
			"c:1": reply(503, "busy", "Retry-After", "5"),
		}}
		c := newFakeClient(t, f)
		ctx, cancel := context.WithTimeout(t.Context(), 7*time.Second)
		defer cancel()
		start := time.Now()
		err := c.Delete(ctx, "0123456789abcdef0123456789abcdef")
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAllNodesFailed) {
			t.Fatalf("Delete = %v, want the context's deadline", err)
		}
		if waited := time.Since(start); waited != 7*time.Second {
			t.Errorf("returned after %v, want when the context ended, 7s", waited)
		}
		if n := len(f.requests()); n != 2 {
			t.Errorf("%d requests, want 2 (at 0s and 5s)", n)
		}
	})
}

// TestFailoverOnLoopback proves failover over real sockets: a node
// address nobody listens on (refused at once on loopback) is passed over
// for the next, and the delete succeeds.
func TestFailoverOnLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	var got []string
	var mu sync.Mutex
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
	}))
	defer live.Close()
	c, err := New([]string{dead, live.URL}, WithBackoff(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), "0123456789abcdef0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "DELETE /timers/0123456789abcdef0123456789abcdef" {
		t.Errorf("live node got %v, want the one DELETE", got)
	}
}

// TestBackoff proves the bounds of the wait before a retry: half to all
// of BackoffMin doubled per retry, up to BackoffMax; never less than the
// Retry-After, which is capped at MaxRetryAfter.
func TestBackoff(t *testing.T) {
	c := &Client{cfg: DefaultConfig()}
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 0, 100 * time.Millisecond, 200 * time.Millisecond},
		{5, 0, 800 * time.Millisecond, 1600 * time.Millisecond},
		{6, 0, time.Second, 2 * time.Second},
		{60, 0, time.Second, 2 * time.Second},
		{1, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		{1, time.Hour, DefaultMaxRetryAfter, DefaultMaxRetryAfter},
	}
	for _, tt := range tests {
		for range 100 {
			if d := c.backoff(tt.attempt, tt.retryAfter); d < tt.lo || d > tt.hi {
				t.Fatalf("backoff(%d, %v) = %v, want %v..%v", tt.attempt, tt.retryAfter, d, tt.lo, tt.hi)
			}
		}
	}
}

// TestParseRetryAfter proves both forms of Retry-After are read and that
// anything else counts as none.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]time.Duration{
		"":                              0,
		"1":                             time.Second,
		"120":                           2 * time.Minute,
		"-1":                            0,
		"soon":                          0,
		"Thu, 01 Jan 2026 00:00:30 GMT": 30 * time.Second,
		"Wed, 31 Dec 2025 00:00:00 GMT": 0,
	}
	for v, want := range tests {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestNew proves which node addresses a client takes, how it spells them,
// and that it refuses the rest with ErrInvalid.
func TestNew(t *testing.T) {
	c, err := New([]string{"127.0.0.1:7000", "localhost", "http://[::1]:7001/", "https://chronos.example:443"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:7000", "localhost:7253", "[::1]:7001", "chronos.example:443"}
	if got := c.Nodes(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Nodes = %v, want %v", got, want)
	}
	for _, bad := range [][]string{
		nil,
		{"ftp://127.0.0.1:1"},
		{"http://127.0.0.1:1/path"},
		{"127.0.0.1:0"},
		{"127.0.0.1:99999"},
		{"http://user@127.0.0.1:1"},
		{"127.0.0.1:1", "http://127.0.0.1:1"},
		{":7253"},
	} {
		if _, err := New(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := New([]string{"127.0.0.1:1"}, WithAttemptTimeout(0)); !errors.Is(err, ErrInvalid) {
		t.Errorf("New with AttemptTimeout 0 = %v, want ErrInvalid", err)
	}
}

// TestCreateIDOnFailure proves which ID a failed Create returns: the
// chosen one, with an empty bloom filter, when the outcome is unknown (no
// node answered, or the last said 503, "may still take effect"), so the
// caller can retry or delete it; none when a node refused it with 400.
func TestCreateIDOnFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNodes{answer: map[string]func(*http.Request) (*http.Response, error){
			"a:1": refused, "b:1": reply(503, "busy"), "c:1": reply(503, "busy"),
		}}
		c := newFakeClient(t, f)
		id, err := c.Create(t.Context(), testTimer)
		if !errors.Is(err, ErrAllNodesFailed) || len(id) != 32 || string(id[16:]) != "0000000000000000" ||
			"/timers/"+string(id) != f.requests()[0].path {
			t.Errorf("Create with no node taking it = %q, %v; want the chosen ID and ErrAllNodesFailed", id, err)
		}
		f.answer["a:1"] = reply(400, "no", "Reason", "no")
		if id, err := c.Create(t.Context(), testTimer); id != "" || !errors.Is(err, ErrBadRequest) {
			t.Errorf("Create refused = %q, %v; want no ID and ErrBadRequest", id, err)
		}
	})
}

// TestWritesCarryTheAttemptDeadline proves every write carries, in
// X-Chronos-Deadline, when its attempt gives up (so that a node that gets
// it later refuses it), a read carries none, and a 408 (a node got the
// write past its deadline and did not apply it) is retried on the next
// node.
func TestWritesCarryTheAttemptDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		deadlines, arrived := map[string]string{}, map[string]time.Time{}
		record := func(next func(*http.Request) (*http.Response, error)) func(*http.Request) (*http.Response, error) {
			return func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				deadlines[r.Method+" "+r.URL.Host] = r.Header.Get(wire.HeaderDeadline)
				arrived[r.Method+" "+r.URL.Host] = time.Now()
				mu.Unlock()
				return next(r)
			}
		}
		f := &fakeNodes{answer: map[string]func(*http.Request) (*http.Response, error){
			"a:1": record(reply(http.StatusRequestTimeout, "deadline passed")),
			"b:1": record(func(r *http.Request) (*http.Response, error) {
				if r.Method == http.MethodGet {
					return reply(200, `{"state":"absent"}`)(r)
				}
				return located("00000000000000ff")(r)
			}),
			"c:1": refused,
		}}
		c := newFakeClient(t, f, WithAttemptTimeout(5*time.Second))
		id, err := c.Create(t.Context(), testTimer)
		if err != nil {
			t.Fatalf("Create after a 408: %v, want it retried on b:1", err)
		}
		_, _ = c.Get(t.Context(), id)
		mu.Lock()
		defer mu.Unlock()
		for _, k := range []string{"PUT a:1", "PUT b:1"} {
			ms, err := strconv.ParseInt(deadlines[k], 10, 64)
			if d := time.UnixMilli(ms).Sub(arrived[k]); err != nil || d < 4*time.Second || d > 5*time.Second {
				t.Errorf("%s: %s %q, want the attempt's end, 5 s on", k, wire.HeaderDeadline, deadlines[k])
			}
		}
		if d, ok := deadlines["GET b:1"]; !ok || d != "" {
			t.Errorf("GET: %s %q (sent %v), want none", wire.HeaderDeadline, d, ok)
		}
	})
}
