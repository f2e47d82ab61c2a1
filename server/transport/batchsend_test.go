package transport

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// peerTransport is a peer in memory, in a synctest bubble. It answers a
// lone request, or each sub-request of a batch, by its target:
// /timers/block waits for gate, /timers/hold for the request's end,
// /timers/slow takes 2s, /timers/conflict
// is answered 409, /timers/huge with a body over wire.MaxBodyBytes, any
// other with 200 and the target as body. It records each round trip, a
// batch as "batch" and its sub-requests. With refuse set it answers every
// batch with that status; with fail set every batch fails with it.
type peerTransport struct {
	gate   chan struct{}
	refuse int
	fail   error

	mu    sync.Mutex
	trips []string
	subs  []node.Request // every sub-request of every batch
}

func (p *peerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.GotConn != nil {
		tr.GotConn(httptrace.GotConnInfo{})
	}
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != BatchPath {
		p.record(r.Method + " " + r.URL.RequestURI())
		resp, err := p.answer(ctx.Done(), node.Request{Method: r.Method, URL: r.URL.RequestURI()})
		return httpResponse(r, resp), err
	}
	reqs, err := parseBatchRequest(body)
	if err != nil || r.Header.Get(node.HeaderContentType) != batchContentType {
		return nil, errors.New("peerTransport: not a batch")
	}
	trip := []string{"batch"}
	for _, s := range reqs {
		trip = append(trip, s.Method+" "+s.URL)
	}
	p.record(strings.Join(trip, " | "), reqs...)
	switch {
	case p.fail != nil:
		return nil, p.fail
	case p.refuse != 0:
		return httpResponse(r, errorReply(p.refuse, "refused by the test")), nil
	}
	resps := make([]node.Response, len(reqs))
	for i, s := range reqs {
		resps[i], _ = p.answer(ctx.Done(), s)
	}
	return httpResponse(r, node.Response{Status: 200, Header: node.Header{node.HeaderContentType: batchContentType},
		Body: appendBatchResponse(nil, resps)}), nil
}

func (p *peerTransport) answer(stop <-chan struct{}, r node.Request) (node.Response, error) {
	switch r.URL {
	case "/timers/block":
		select {
		case <-p.gate:
		case <-stop:
			return node.Response{}, errors.New("peerTransport: cancelled")
		}
	case "/timers/hold":
		<-stop
		return node.Response{}, errors.New("peerTransport: cancelled")
	case "/timers/slow":
		time.Sleep(2 * time.Second)
	case "/timers/conflict":
		return node.Response{Status: 409, Header: node.Header{node.HeaderVersion: "7"}}, nil
	case "/timers/huge":
		return node.Response{Status: 200, Body: make([]byte, wire.MaxBodyBytes+1)}, nil
	}
	return node.Response{Status: 200, Header: node.Header{}, Body: []byte(r.URL)}, nil
}

func (p *peerTransport) record(trip string, subs ...node.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trips = append(p.trips, trip)
	p.subs = append(p.subs, subs...)
}

func (p *peerTransport) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.trips...)
}

func httpResponse(r *http.Request, resp node.Response) *http.Response {
	h := http.Header{}
	for k, v := range resp.Header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: resp.Status, Header: h, Body: io.NopCloser(bytes.NewReader(resp.Body)),
		ContentLength: int64(len(resp.Body)), Request: r}
}

// peerOutcome is what a send's done was called with, by target.
type peerOutcome struct {
	target string
	status int
	body   string
	err    error
}

// peerSender sends requests to one peer through a Client on p, with one
// batch worker per peer unless lim says otherwise, and collects the
// outcomes in the order the node got them.
type peerSender struct {
	c   *Client
	mu  sync.Mutex
	got []peerOutcome
}

func newPeerSender(p *peerTransport, lim limits) *peerSender {
	return &peerSender{c: newClient(newNodeLock().Do, nil, lim, p)}
}

// send sends method to target at the peer, signed with the target as its
// signature and body, with timeout and maxWait.
func (s *peerSender) send(method, target string, timeout, maxWait time.Duration, header node.Header) {
	if header == nil {
		header = node.Header{node.HeaderSignature: "sig " + target}
	}
	req := node.Request{Method: method, URL: "http://peer.test:7253" + target, Header: header, Body: []byte(target), MaxWait: maxWait}
	s.c.Send(req, timeout, func(r node.Response, err error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.got = append(s.got, peerOutcome{target, r.Status, string(r.Body), err})
	})
}

func (s *peerSender) put(target string) { s.send(http.MethodPut, target, time.Second, 0, nil) }

func (s *peerSender) outcomes() []peerOutcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]peerOutcome(nil), s.got...)
}

// oneBatchWorker is the default limits with one batch worker per peer.
func oneBatchWorker() limits {
	lim := defaultLimits()
	lim.batchWorkers = 1
	return lim
}

// blocked sends /timers/block and waits until it holds the peer's only
// batch worker, so that what is sent next waits in the queue.
func (s *peerSender) blocked() {
	s.put("/timers/block")
	synctest.Wait()
}

// TestClientBatchesWhatWaits proves the outbound side: a request to an
// idle peer goes alone, at once; the requests that waited meanwhile go
// together in one batch, each as it was sent (method, target, header
// fields, body); each gets its own response, a 409 included, and the
// node gets them in the order they were sent.
func TestClientBatchesWhatWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peerTransport{gate: make(chan struct{})}
		s := newPeerSender(p, oneBatchWorker())
		defer s.c.Close()
		s.blocked()
		s.put("/timers/a")
		s.send(http.MethodDelete, "/timers/b", time.Second, 0, nil)
		s.put("/timers/conflict")
		s.put("/timers/c?x=%41")
		synctest.Wait()
		close(p.gate)
		synctest.Wait()
		want := []string{"PUT /timers/block", "batch | PUT /timers/a | DELETE /timers/b | PUT /timers/conflict | PUT /timers/c?x=%41"}
		if got := p.seen(); !reflect.DeepEqual(got, want) {
			t.Errorf("round trips %q, want %q", got, want)
		}
		for _, sub := range p.subs {
			if sub.Header.Get(node.HeaderSignature) != "sig "+sub.URL || string(sub.Body) != sub.URL {
				t.Errorf("sub-request %s: header %v body %q, want its own signature and body", sub.URL, sub.Header, sub.Body)
			}
		}
		wantOut := []peerOutcome{{"/timers/block", 200, "/timers/block", nil}, {"/timers/a", 200, "/timers/a", nil},
			{"/timers/b", 200, "/timers/b", nil}, {"/timers/conflict", 409, "", nil}, {"/timers/c?x=%41", 200, "/timers/c?x=%41", nil}}
		if got := s.outcomes(); !reflect.DeepEqual(got, wantOut) {
			t.Errorf("outcomes %v, want %v", got, wantOut)
		}
		if st := s.c.Stats(); st.OK != 5 || st.PeerBatches != 1 || st.PeerBatched != 4 || st.QueueDepth != 0 || st.InFlight != 0 {
			t.Errorf("stats %+v, want 5 ok, 4 in 1 batch, nothing queued or in flight", st)
		}
		rec := httptest.NewRecorder()
		scrape(s.c).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, want := range []string{"chronos_outbound_batches_total 1\n", "chronos_outbound_batched_requests_total 4\n",
			`chronos_outbound_requests_total{kind="peer",outcome="ok"} 5`} {
			if !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})
}

// TestClientSecondWorkerWaitsForAWholeBatch proves the rule of a peer's
// second batch worker: while the first is in a round trip, what is sent
// waits for it and goes in one batch once it is back, rather than the
// first request to arrive going alone in a second exchange; only a whole
// batch waiting sets the second worker going beside the first.
func TestClientSecondWorkerWaitsForAWholeBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peerTransport{gate: make(chan struct{})}
		lim := defaultLimits()
		lim.batchRequests = 3
		s := newPeerSender(p, lim)
		defer s.c.Close()
		s.blocked()
		s.put("/timers/a")
		s.put("/timers/b")
		synctest.Wait()
		if got, want := p.seen(), []string{"PUT /timers/block"}; !reflect.DeepEqual(got, want) {
			t.Errorf("two waiting behind a round trip: round trips %q, want %q", got, want)
		}
		s.put("/timers/c")
		synctest.Wait()
		want := []string{"PUT /timers/block", "batch | PUT /timers/a | PUT /timers/b | PUT /timers/c"}
		if got := p.seen(); !reflect.DeepEqual(got, want) {
			t.Errorf("a whole batch waiting: round trips %q, want %q", got, want)
		}
		s.put("/timers/d")
		s.put("/timers/e")
		synctest.Wait()
		close(p.gate)
		synctest.Wait()
		want = append(want, "batch | PUT /timers/d | PUT /timers/e")
		if got := p.seen(); !reflect.DeepEqual(got, want) {
			t.Errorf("once the first is back: round trips %q, want %q", got, want)
		}
		if got := len(s.outcomes()); got != 6 {
			t.Errorf("%d outcomes, want 6", got)
		}
	})
}

// TestClientBatchLimits proves a batch holds at most batchRequests
// requests and batchBytes bytes, in the order they were sent, and that a
// request too large for any batch, or left alone, goes alone.
func TestClientBatchLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peerTransport{gate: make(chan struct{})}
		lim := oneBatchWorker()
		lim.batchRequests = 3
		s := newPeerSender(p, lim)
		defer s.c.Close()
		s.blocked()
		for _, x := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			s.put("/timers/" + x)
		}
		close(p.gate)
		synctest.Wait()
		want := []string{"PUT /timers/block", "batch | PUT /timers/a | PUT /timers/b | PUT /timers/c",
			"batch | PUT /timers/d | PUT /timers/e | PUT /timers/f", "PUT /timers/g"}
		if got := p.seen(); !reflect.DeepEqual(got, want) {
			t.Errorf("with at most 3 a batch: round trips %q, want %q", got, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		p := &peerTransport{gate: make(chan struct{})}
		entry := func(target string) int {
			return batchEntrySize(node.Request{Method: "PUT", URL: target, Header: node.Header{node.HeaderSignature: "sig " + target}, Body: []byte(target)})
		}
		lim := oneBatchWorker()
		lim.batchBytes = batchHeadSize + entry("/timers/a") + entry("/timers/b")
		s := newPeerSender(p, lim)
		defer s.c.Close()
		s.blocked()
		big := "/timers/" + strings.Repeat("x", lim.batchBytes)
		for _, target := range []string{"/timers/a", "/timers/b", "/timers/c", big, "/timers/d", "/timers/e"} {
			s.put(target)
		}
		close(p.gate)
		synctest.Wait()
		want := []string{"PUT /timers/block", "batch | PUT /timers/a | PUT /timers/b", "PUT /timers/c", "PUT " + big,
			"batch | PUT /timers/d | PUT /timers/e"}
		if got := p.seen(); !reflect.DeepEqual(got, want) {
			t.Errorf("with at most %d bytes a batch: round trips %q, want %q", lim.batchBytes, got, want)
		}
	})
}

// TestClientBatchFailures proves a batch fails only what it must: a
// sub-response too large fails its own request alone; a request that
// waited past its MaxWait is shed alone and its neighbours still go
// together; a batch refused or failed fails each of its requests with the
// reason; and Close fails each request still queued. The node gets every
// outcome in the order the requests were sent.
func TestClientBatchFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peerTransport{}
		s := newPeerSender(p, oneBatchWorker())
		defer s.c.Close()
		s.put("/timers/slow")
		synctest.Wait()
		s.put("/timers/a")
		s.send(http.MethodPut, "/timers/late", time.Second, time.Second, nil)
		s.put("/timers/huge")
		time.Sleep(3 * time.Second) // /timers/slow is answered after 2s
		synctest.Wait()
		got := s.outcomes()
		if len(got) != 4 || got[1].status != 200 || got[1].err != nil {
			t.Fatalf("outcomes %v, want 4, /timers/a answered 200", got)
		}
		if got[2].target != "/timers/late" || !errors.Is(got[2].err, ErrShed) {
			t.Errorf("request past its MaxWait: %v, want ErrShed", got[2])
		}
		if got[3].target != "/timers/huge" || got[3].err == nil || !strings.Contains(got[3].err.Error(), "response body larger than 1048576 bytes") {
			t.Errorf("request answered too large: %v, want its own error", got[3])
		}
		if want := "batch | PUT /timers/a | PUT /timers/huge"; p.seen()[1] != want {
			t.Errorf("round trips %q, want the second %q", p.seen(), want)
		}
		if st := s.c.Stats(); st.OK != 2 || st.Shed != 1 || st.Failed != 1 {
			t.Errorf("stats %+v, want 2 ok, 1 shed, 1 failed", st)
		}
	})
	for _, p := range []*peerTransport{{refuse: 400}, {fail: errors.New("connection reset by the test")}} {
		synctest.Test(t, func(t *testing.T) {
			p.gate = make(chan struct{})
			s := newPeerSender(p, oneBatchWorker())
			s.blocked()
			s.put("/timers/a")
			s.put("/timers/b")
			close(p.gate)
			synctest.Wait()
			s.put("/timers/hold")
			synctest.Wait()
			s.put("/timers/queued")
			s.c.Close()
			got := s.outcomes()
			want := []string{"/timers/block", "/timers/a", "/timers/b", "/timers/hold", "/timers/queued"}
			if len(got) != len(want) {
				t.Fatalf("outcomes %v, want for %q in order", got, want)
			}
			for i, o := range got {
				if o.target != want[i] {
					t.Fatalf("outcomes %v, want for %q in order", got, want)
				}
			}
			for _, o := range got[1:3] {
				if p.refuse != 0 && (!errors.Is(o.err, errBatchRefused) || !strings.Contains(o.err.Error(), "400 refused by the test")) {
					t.Errorf("%s in a batch answered 400: err %v, want errBatchRefused with the status and reason", o.target, o.err)
				}
				if p.fail != nil && !errors.Is(o.err, p.fail) {
					t.Errorf("%s in a batch that failed: err %v, want %v", o.target, o.err, p.fail)
				}
			}
			for _, o := range got[3:] {
				if !errors.Is(o.err, ErrClientClosed) {
					t.Errorf("%s at Close: err %v, want ErrClientClosed", o.target, o.err)
				}
			}
		})
	}
}

// TestClientBatchesOnlyPeerWrites proves what never goes in a batch: a
// callback, which names its timer, and a resync page (GET) are sent at
// once on their own queue while the peer's batch worker is busy; and
// requests of different timeouts go in different batches.
func TestClientBatchesOnlyPeerWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peerTransport{gate: make(chan struct{})}
		s := newPeerSender(p, oneBatchWorker())
		defer s.c.Close()
		s.blocked()
		s.send(http.MethodPost, "/cb", time.Second, 0, node.Header{wire.HeaderTimerID: "0123456789abcdef"})
		s.send(http.MethodGet, "/timers?node-for-replicas=x", time.Second, 0, nil)
		synctest.Wait()
		// The callback and the page go on workers of their own, in
		// whichever order the scheduler runs them.
		want := []string{"PUT /timers/block", "GET /timers?node-for-replicas=x", "POST /cb"}
		got := p.seen()
		if len(got) == len(want) {
			slices.Sort(got[1:])
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trips while the batch worker is busy: %q, want %q", got, want)
		}
		s.put("/timers/a")
		s.send(http.MethodPut, "/timers/b", 2*time.Second, 0, nil)
		s.send(http.MethodPut, "/timers/c", 2*time.Second, 0, nil)
		close(p.gate)
		synctest.Wait()
		want = []string{"PUT /timers/a", "batch | PUT /timers/b | PUT /timers/c"}
		if got := p.seen(); len(got) < 3 || !reflect.DeepEqual(got[3:], want) {
			t.Errorf("round trips after the first three %q, want %q", got, want)
		}
	})
}

// TestBatchOverLoopback proves the two sides together over real sockets:
// a Client's requests that waited for a busy peer reach that peer's
// Handler as one batch, the node behind it gets each as sent, and each
// done gets its own reply.
func TestBatchOverLoopback(t *testing.T) {
	s := newNodeLock()
	arrived, release := make(chan struct{}), make(chan struct{})
	core := &fakeCore{serial: s, t: t, respond: func(req node.Request, reply func(node.Response)) {
		if req.URL == "/timers/block" {
			close(arrived)
			go func() {
				<-release
				s.Do(func() { reply(node.Response{Status: 200}) })
			}()
			return
		}
		reply(node.Response{Status: 200, Header: node.Header{"X-Got": req.Header.Get(node.HeaderSignature)}, Body: req.Body})
	}}
	peer := httptest.NewServer(NewHandler(core, s.Do, chantest.Timeout, nil))
	defer peer.Close()
	c := newClient(newNodeLock().Do, nil, oneBatchWorker(), newTransport(newDNSDialer().DialContext))
	defer c.Close()
	done := make(chan peerOutcome, 4)
	send := func(target string) {
		req := node.Request{Method: http.MethodPut, URL: peer.URL + target, Header: node.Header{node.HeaderSignature: "sig " + target}, Body: []byte(target)}
		c.Send(req, chantest.Timeout, func(r node.Response, err error) {
			done <- peerOutcome{target, r.Status, r.Header.Get("X-Got") + " " + string(r.Body), err}
		})
	}
	send("/timers/block")
	// The first request holds the only batch worker until release.
	chantest.Receive(t, arrived, "the first request at the peer")
	send("/timers/a")
	send("/timers/b")
	send("/timers/c")
	close(release)
	chantest.Receive(t, done, "the blocked request's outcome")
	for _, target := range []string{"/timers/a", "/timers/b", "/timers/c"} {
		if o := chantest.Receive(t, done, "an outcome"); o.target != target || o.status != 200 || o.body != "sig "+target+" "+target || o.err != nil {
			t.Errorf("outcome %+v, want %s answered 200 with its own signature and body", o, target)
		}
	}
	if st := c.Stats(); st.PeerBatches != 1 || st.PeerBatched != 3 {
		t.Errorf("stats %+v, want the 3 in one batch", st)
	}
}

// TestPlainTarget proves the target read from a plain URL without parsing
// it is the one url.Parse and RequestURI make of it, that a URL less
// plain is left to them, and that a URL a node sends a peer is read
// without an allocation.
func TestPlainTarget(t *testing.T) {
	for _, tt := range []struct {
		url   string
		plain bool
	}{
		{"http://127.0.0.1:7253/timers/0123456789abcdef0123456789abcdef", true},
		{"https://node-2.example:443/timers/references?a=b&c=d", true},
		{"http://h/timers?", true},
		{"http://h/a//b/./c", true},
		{"http://h:7253/x?a=b?c", false},
		{"http://h", false},
		{"http://h?x=1", false},
		{"http://u@h/x", false},
		{"http://h:/x", false},
		{"http://h:8x/x", false},
		{"http://:80/x", false},
		{"http://[::1]:80/x", false},
		{"http://h/a%2Fb", false},
		{"http://h/a b", false},
		{"http://h/x#f", false},
		{"HTTP://h/x", false},
		{"ftp://h/x", false},
		{"http://h/x;y", false},
	} {
		got, ok := plainTarget(tt.url)
		if ok != tt.plain {
			t.Errorf("plainTarget(%q) plain = %v, want %v", tt.url, ok, tt.plain)
			continue
		}
		if !ok {
			continue
		}
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Errorf("url.Parse(%q): %v, yet plainTarget read it", tt.url, err)
			continue
		}
		if want := u.RequestURI(); got != want {
			t.Errorf("plainTarget(%q) = %q, want %q as RequestURI has it", tt.url, got, want)
		}
	}
	req := node.Request{Method: http.MethodPut, URL: "http://127.0.0.1:7253/timers/0123456789abcdef0123456789abcdef"}
	if n := testing.AllocsPerRun(10, func() { batchTarget(req, kindPeer) }); n != 0 {
		t.Errorf("batchTarget of a node's URL allocated %v times, want 0", n)
	}
}
