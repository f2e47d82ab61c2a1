package transport

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chronos-timer/chronos/internal/logtest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// fakeTransport answers in memory, in a synctest bubble: it calls the
// trace's GotConn, as a real transport does once a request has its
// connection, unless the path is /noconn, then answers by path: /block
// waits for the request's end, /slow/<duration> takes that long, anything
// else answers 200 at once.
type fakeTransport struct{}

func (fakeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if r.URL.Path == "/noconn" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.GotConn != nil {
		tr.GotConn(httptrace.GotConnInfo{})
	}
	if r.URL.Path == "/block" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if d, ok := strings.CutPrefix(r.URL.Path, "/slow/"); ok {
		wait, _ := time.ParseDuration(d)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// outcome is what a send's done was called with.
type outcome struct {
	resp node.Response
	err  error
}

// testClient is a Client on fakeTransport with one worker per host and the
// given queue bounds (for each host and for all, queue), entering a real
// Serial; it logs to logs.
func testClient(queue int, queueWait time.Duration, logs *logtest.Buffer) *Client {
	lim := defaultLimits()
	lim.workers, lim.queue, lim.queued, lim.queueWait = 1, queue, queue, queueWait
	log := slog.New(slog.NewTextHandler(logs, nil))
	return newClient(newNodeLock().Do, log, lim, fakeTransport{})
}

// inBubble runs f in a synctest bubble with a testClient that is closed
// when f returns.
func inBubble(t *testing.T, queue int, queueWait time.Duration, logs *logtest.Buffer, f func(t *testing.T, c *Client)) {
	synctest.Test(t, func(t *testing.T) {
		c := testClient(queue, queueWait, logs)
		defer c.Close()
		f(t, c)
	})
}

// scrape serves c's metrics, as the server's registry does.
func scrape(c *Client) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.metrics.collectors()...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// send sends a POST to url with timeout and returns the channel its outcome
// arrives on.
func send(c *Client, url string, timeout time.Duration) <-chan outcome {
	ch := make(chan outcome, 1)
	c.Send(node.Request{Method: http.MethodPost, URL: url}, timeout, func(r node.Response, err error) { ch <- outcome{r, err} })
	return ch
}

// TestClientShedsWhenQueueFull proves a send beyond its host's queue
// limit fails at once with ErrShed naming the host, is counted, and is
// logged once per interval with the count shed since the last line.
func TestClientShedsWhenQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logtest.Buffer{}
		c := testClient(1, time.Minute, logs)
		defer c.Close()
		running := send(c, "http://cb.test/block", time.Hour)
		synctest.Wait()
		queued := send(c, "http://cb.test/cb", time.Hour)
		var shed []<-chan outcome
		for range 3 {
			shed = append(shed, send(c, "http://cb.test/cb", time.Hour))
		}
		synctest.Wait()
		for _, ch := range shed {
			o := <-ch
			if !errors.Is(o.err, ErrShed) || !strings.Contains(o.err.Error(), "http://cb.test:80") {
				t.Errorf("shed send: err = %v, want ErrShed naming http://cb.test:80", o.err)
			}
		}
		if st := c.Stats(); st.Shed != 3 || st.QueueDepth != 1 || st.InFlight != 1 {
			t.Errorf("stats = %+v, want 3 shed, 1 queued, 1 in flight", st)
		}
		if n := strings.Count(logs.String(), "outbound requests shed"); n != 1 || !strings.Contains(logs.String(), "shed=1") {
			t.Errorf("log after 3 sheds within the interval:\n%s\nwant one line with shed=1", logs)
		}
		time.Sleep(clientShedLogInterval)
		send(c, "http://cb.test/cb", time.Hour)
		if n := strings.Count(logs.String(), "outbound requests shed"); n != 2 || !strings.Contains(logs.String(), "shed=3") {
			t.Errorf("log after the interval:\n%s\nwant a second line with shed=3", logs)
		}
		c.Close()
		if o := <-running; !errors.Is(o.err, ErrClientClosed) {
			t.Errorf("running send: err = %v, want ErrClientClosed", o.err)
		}
		if o := <-queued; !errors.Is(o.err, ErrClientClosed) {
			t.Errorf("queued send: err = %v, want ErrClientClosed", o.err)
		}
	})
}

// TestClientTimeoutCountsFromWrite proves the wait for a worker does not
// count against a request's timeout: the second of two sends to a host
// with one worker waits 900ms in the queue, then takes 900ms, and still
// succeeds under a 1s timeout; a request slower than its timeout fails
// with a deadline error.
func TestClientTimeoutCountsFromWrite(t *testing.T) {
	inBubble(t, 10, time.Minute, &logtest.Buffer{}, func(t *testing.T, c *Client) {
		first := send(c, "http://cb.test/slow/900ms", time.Second)
		second := send(c, "http://cb.test/slow/900ms", time.Second)
		late := send(c, "http://cb.test/slow/2s", time.Second)
		for i, ch := range []<-chan outcome{first, second} {
			if o := <-ch; o.err != nil || o.resp.Status != http.StatusOK {
				t.Errorf("send %d: status %d err %v, want 200 and no error", i, o.resp.Status, o.err)
			}
		}
		if o := <-late; !errors.Is(o.err, context.DeadlineExceeded) || errors.Is(o.err, ErrShed) {
			t.Errorf("slow send: err = %v, want a deadline error, not shed", o.err)
		}
		if st := c.Stats(); st.OK != 2 || st.Failed != 1 || st.Shed != 0 {
			t.Errorf("stats = %+v, want 2 ok, 1 failed, none shed", st)
		}
	})
}

// TestClientShedsAfterQueueWait proves a request that waited longer than
// the queue wait limit, for a worker or for a connection, is shed with
// ErrShed instead of being sent late.
func TestClientShedsAfterQueueWait(t *testing.T) {
	inBubble(t, 10, time.Second, &logtest.Buffer{}, func(t *testing.T, c *Client) {
		busy := send(c, "http://cb.test/slow/1500ms", time.Minute)
		waited := send(c, "http://cb.test/cb", time.Minute)
		noConn := send(c, "http://other.test/noconn", time.Minute)
		if o := <-busy; o.err != nil {
			t.Errorf("first send: err = %v, want none", o.err)
		}
		for _, ch := range []<-chan outcome{waited, noConn} {
			if o := <-ch; !errors.Is(o.err, ErrShed) {
				t.Errorf("err = %v, want ErrShed", o.err)
			}
		}
		if st := c.Stats(); st.Shed != 2 || st.OK != 1 {
			t.Errorf("stats = %+v, want 2 shed, 1 ok", st)
		}
	})
}

// TestClientShedsAfterTheRequestsOwnWait proves a request's own MaxWait
// bounds its wait within the Client's: a pop another replica would make
// is shed after it, while a request without one (the last replica's pop)
// waits for its turn and is sent.
func TestClientShedsAfterTheRequestsOwnWait(t *testing.T) {
	inBubble(t, 10, time.Minute, &logtest.Buffer{}, func(t *testing.T, c *Client) {
		busy := send(c, "http://cb.test/slow/3s", time.Minute)
		handOn := make(chan outcome, 1)
		c.Send(node.Request{Method: http.MethodPost, URL: "http://cb.test/cb", MaxWait: time.Second}, time.Minute,
			func(r node.Response, err error) { handOn <- outcome{r, err} })
		last := send(c, "http://cb.test/cb", time.Minute)
		if o := <-busy; o.err != nil {
			t.Errorf("first send: err = %v, want none", o.err)
		}
		if o := <-handOn; !errors.Is(o.err, ErrShed) {
			t.Errorf("send with MaxWait 1s after 3s queued: err = %v, want ErrShed", o.err)
		}
		if o := <-last; o.err != nil || o.resp.Status != http.StatusOK {
			t.Errorf("send without MaxWait: status %d err %v, want 200 once its turn came", o.resp.Status, o.err)
		}
	})
}

// TestClientBatchesCompletions proves completions enter the node in
// batches of at most limits.batch: 600 completions that pile up while the
// node is busy enter it in at most 4 calls, not 600.
func TestClientBatchesCompletions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const sends = 600
		gate := make(chan struct{})
		delivered := 0
		var sizes []int
		enter := func(f func()) bool {
			<-gate
			before := delivered
			f()
			sizes = append(sizes, delivered-before)
			return true
		}
		lim := defaultLimits()
		lim.workers = 8
		c := newClient(enter, nil, lim, fakeTransport{})
		for range sends {
			c.Send(node.Request{Method: http.MethodPost, URL: "http://cb.test/cb"}, time.Second, func(node.Response, error) { delivered++ })
		}
		synctest.Wait()
		close(gate)
		c.Close()
		if delivered != sends || len(sizes) > 4 || c.Stats().Batches != uint64(len(sizes)) {
			t.Fatalf("%d of %d delivered in batches %v (stats %+v), want all in at most 4", delivered, sends, sizes, c.Stats())
		}
		for _, n := range sizes {
			if n > lim.batch {
				t.Errorf("batch of %d, want at most %d", n, lim.batch)
			}
		}
	})
}

// TestClientCloseFailsQueued proves Close fails the running and queued
// requests at once, with ErrClientClosed, delivers every outcome before it
// returns, and leaves no goroutine behind (the bubble ends only when all
// of its goroutines have); a send after Close is dropped and counted.
func TestClientCloseFailsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testClient(10, time.Minute, &logtest.Buffer{})
		var chans []<-chan outcome
		for range 3 {
			chans = append(chans, send(c, "http://cb.test/block", time.Hour))
		}
		synctest.Wait()
		c.Close()
		for i, ch := range chans {
			select {
			case o := <-ch:
				if !errors.Is(o.err, ErrClientClosed) {
					t.Errorf("send %d: err = %v, want ErrClientClosed", i, o.err)
				}
			default:
				t.Errorf("send %d: no outcome when Close returned", i)
			}
		}
		send(c, "http://cb.test/cb", time.Hour)
		if st := c.Stats(); st.Failed != 4 || st.QueueDepth != 0 || st.InFlight != 0 {
			t.Errorf("stats = %+v, want 4 failed, nothing queued or in flight", st)
		}
	})
}

// TestClientIdleWorkersEnd proves a host's workers end once idle and the
// host is forgotten, so callbacks to many hosts leave nothing behind.
func TestClientIdleWorkersEnd(t *testing.T) {
	inBubble(t, 10, time.Minute, &logtest.Buffer{}, func(t *testing.T, c *Client) {
		<-send(c, "http://a.test/cb", time.Second)
		<-send(c, "http://b.test/cb", time.Second)
		time.Sleep(clientWorkerIdle)
		synctest.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.hosts) != 0 {
			t.Errorf("%d hosts remembered after the idle time, want 0", len(c.hosts))
		}
	})
}

// TestHostKey proves requests are queued per destination as the
// transport pools connections: scheme, host and port, default port filled.
func TestHostKey(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"http://Cb.Test/x?y", "http://cb.test:80"},
		{"http://cb.test:80/x", "http://cb.test:80"},
		{"https://u:p@cb.test", "https://cb.test:443"},
		{"http://127.0.0.1:7253/timers", "http://127.0.0.1:7253"},
		{"http://[::1]/cb", "http://[::1]:80"},
		{"http://[::1]:99#f", "http://[::1]:99"},
		{"HTTP://cb.test:80/x", "http://cb.test:80"},
		{"http://u@cb.test:80/x", "http://cb.test:80"},
		{"http://cb.test:8080", "http://cb.test:8080"},
		{"not a url", "not a url"},
	} {
		if got := hostKey(tt.url); got != tt.want {
			t.Errorf("hostKey(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
	// A URL that starts with its key, as a callback or a peer's usually
	// does, costs no copy.
	if n := testing.AllocsPerRun(10, func() { hostKey("http://127.0.0.1:7253/timers/x") }); n != 0 {
		t.Errorf("hostKey of a URL that starts with its key allocated %v times, want 0", n)
	}
}

// TestClientMetrics proves the outbound counters reach the Prometheus
// metrics by kind and outcome: a callback answered, a peer request answered
// and a callback shed, beside the queue depth and the callback durations.
func TestClientMetrics(t *testing.T) {
	logs := &logtest.Buffer{}
	inBubble(t, 1, time.Minute, logs, func(t *testing.T, c *Client) {
		callback := func(path string) {
			h := node.Header{wire.HeaderTimerID: "0123456789abcdef"}
			c.Send(node.Request{Method: http.MethodPost, URL: "http://cb.test" + path, Header: h}, time.Second, func(node.Response, error) {})
			synctest.Wait()
		}
		callback("/cb")    // answered
		callback("/block") // in flight
		<-send(c, "http://peer.test/timers", time.Second)
		callback("/cb") // queued
		callback("/cb") // shed
		rec := httptest.NewRecorder()
		scrape(c).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, want := range []string{
			`chronos_outbound_requests_total{kind="callback",outcome="ok"} 1`,
			`chronos_outbound_requests_total{kind="callback",outcome="shed"} 1`,
			`chronos_outbound_requests_total{kind="peer",outcome="ok"} 1`,
			`chronos_outbound_queue_depth 1`,
			`chronos_callback_duration_seconds_count 1`,
		} {
			if !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %q:\n%s", want, rec.Body)
			}
		}
	})
}

// TestHostQueueStaysBounded proves a host's queue that never drains does
// not grow without bound: after 100,000 requests in and out with one or
// two always waiting, its backing array holds few more than those.
func TestHostQueueStaysBounded(t *testing.T) {
	h := &host{}
	h.push(&job{})
	for range 100_000 {
		h.push(&job{})
		if h.pop() == nil {
			t.Fatal("pop of a non-empty queue returned nil")
		}
	}
	if h.waiting() != 1 || cap(h.jobs) > 16 {
		t.Errorf("waiting %d, capacity %d: want 1 waiting in at most 16", h.waiting(), cap(h.jobs))
	}
}

// TestClientShedsWhenAllQueuesFull proves the bound over all hosts: with
// it reached, a send to a host with an empty queue is shed too.
func TestClientShedsWhenAllQueuesFull(t *testing.T) {
	inBubble(t, 1, time.Minute, &logtest.Buffer{}, func(t *testing.T, c *Client) {
		send(c, "http://a.test/block", time.Hour)
		synctest.Wait()
		send(c, "http://a.test/cb", time.Hour) // queued: the bound over all hosts is 1
		if o := <-send(c, "http://b.test/cb", time.Hour); !errors.Is(o.err, ErrShed) || !strings.Contains(o.err.Error(), "for all hosts") {
			t.Errorf("send to another host: err = %v, want ErrShed for all hosts", o.err)
		}
	})
}

// TestClientCompletionPanicClosesNode proves a panic in a completion is
// the node's: the lock into the node (the server's Serial) records it and
// refuses the rest, the panic does
// not escape the delivering goroutine (the run loop reports it), and Close
// still returns.
func TestClientCompletionPanicClosesNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newNodeLock()
		c := newClient(s.Do, nil, defaultLimits(), fakeTransport{})
		c.Send(node.Request{Method: http.MethodPost, URL: "http://cb.test/cb"}, time.Second, func(node.Response, error) { panic("broken invariant") })
		synctest.Wait()
		after := send(c, "http://cb.test/cb", time.Second)
		c.Close()
		if v := s.Panicked(); v != "broken invariant" {
			t.Errorf("recorded panic %v, want the completion's", v)
		}
		select {
		case o := <-after:
			t.Errorf("a completion after the panic entered the node: %+v", o)
		default:
		}
	})
}

// TestHostQueueOfOneAllocatesNothing proves a queue that holds one
// request at a time, as an idle peer's does, reuses its array, and that
// a longer one still hands its requests out oldest first.
func TestHostQueueOfOneAllocatesNothing(t *testing.T) {
	var h host
	j := new(job)
	h.push(j)
	h.pop()
	if n := testing.AllocsPerRun(10, func() {
		h.push(j)
		if got := h.pop(); got != j {
			t.Fatalf("popped %p, want %p", got, j)
		}
	}); n != 0 {
		t.Errorf("a push and a pop allocated %v times, want 0", n)
	}
	jobs := []*job{new(job), new(job), new(job)}
	for _, j := range jobs {
		h.push(j)
	}
	for i, want := range jobs {
		if got := h.pop(); got != want {
			t.Errorf("pop %d = %p, want %p", i, got, want)
		}
	}
	if h.pop() != nil || h.waiting() != 0 {
		t.Errorf("queue holds %d after every job was taken, want 0", h.waiting())
	}
}
