package transport

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// TestClientSend proves the outbound conversion both ways and that done runs
// once, under the lock.
func TestClientSend(t *testing.T) {
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.RequestURI() != "/cb?q=1" || string(body) != "opaque" || r.Header.Get("X-Sequence-Number") != "3" {
			t.Errorf("peer got %s %s %q seq %q, want POST /cb?q=1 \"opaque\" seq 3", r.Method, r.URL.RequestURI(), body, r.Header.Get("X-Sequence-Number"))
		}
		w.Header().Set("location", "/x")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "reply")
	}))
	defer peer.Close()
	s := newNodeLock()
	c := NewClient(s.Do, prometheus.NewRegistry(), nil)
	defer c.Close()
	h := node.Header{}
	h.Set(wire.HeaderSequenceNumber, "3")
	type outcome struct {
		resp node.Response
		err  error
	}
	got := make(chan outcome, 2)
	c.Send(node.Request{Method: http.MethodPost, URL: peer.URL + "/cb?q=1", Header: h, Body: []byte("opaque")}, chantest.Timeout,
		func(resp node.Response, err error) {
			assertLocked(t, s, "done")
			got <- outcome{resp, err}
		})
	o := chantest.Receive(t, got, "completion")
	if o.err != nil || o.resp.Status != http.StatusCreated || string(o.resp.Body) != "reply" || o.resp.Header.Get("Location") != "/x" {
		t.Errorf("outcome = %d %q Location %q err %v, want 201 \"reply\" /x nil", o.resp.Status, o.resp.Body, o.resp.Header.Get("Location"), o.err)
	}
}

// TestClientFailures proves that a timeout, a refused connection and an
// oversized response each come back as an error, and a redirect as itself.
func TestClientFailures(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	peer := httptest.NewServer(failingPeer(release))
	defer peer.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	s := newNodeLock()
	c := NewClient(s.Do, prometheus.NewRegistry(), nil)
	defer c.Close()
	send := func(url string, timeout time.Duration) (node.Response, error) {
		type outcome struct {
			resp node.Response
			err  error
		}
		ch := make(chan outcome, 1)
		c.Send(node.Request{Method: http.MethodPost, URL: url}, timeout, func(r node.Response, err error) { ch <- outcome{r, err} })
		o := chantest.Receive(t, ch, "completion of "+url)
		return o.resp, o.err
	}
	for _, tt := range []struct {
		url     string
		timeout time.Duration
		want    string
	}{
		{peer.URL + "/slow", 10 * time.Millisecond, "deadline exceeded"},
		{closed.URL + "/cb", chantest.Timeout, "server: Post"},
		{peer.URL + "/big", chantest.Timeout, "response body larger than"},
	} {
		if _, err := send(tt.url, tt.timeout); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.url, err, tt.want)
		}
	}
	if resp, err := send(peer.URL+"/redirect", chantest.Timeout); err != nil || resp.Status != http.StatusFound {
		t.Errorf("redirect: status %d err %v, want 302 and no error", resp.Status, err)
	}
}

// failingPeer answers by path: /slow once release is closed or the
// client has gone, /big with a body over wire.MaxBodyBytes, /redirect
// with a 302, /close with "Connection: close"; anything else 200.
func failingPeer(release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read, so the server sees the client go
		switch r.URL.Path {
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/big":
			_, _ = w.Write(bytes.Repeat([]byte("x"), wire.MaxBodyBytes+1))
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/close":
			w.Header().Set("Connection", "close")
		}
	}
}

// TestClientBurstReusesConnections proves a burst of sends to one host
// reuses connections instead of dialing one each: the transport keeps at
// most clientMaxConnsPerHost open at once, and the rest of the burst waits
// for one of them. The count of connections opened over the whole burst
// may pass that bound by a few: net/http closes a connection rather than
// reuse it when its writer has not confirmed the last request within
// 50 ms (a loaded machine), and opens another in its place. So the test
// allows twice the bound, still far below one connection per send.
func TestClientBurstReusesConnections(t *testing.T) {
	const burst = 2000
	var opened atomic.Int64
	var answered sync.WaitGroup
	answered.Add(burst)
	peer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	peer.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	peer.Start()
	defer peer.Close()
	s := newNodeLock()
	// A slow machine (the race detector) may take over clientMaxQueueWait
	// for the burst; what is proved here is reuse, so nothing is shed.
	lim := defaultLimits()
	lim.queueWait = chantest.Timeout
	c := newClient(s.Do, nil, lim, newTransport(newDNSDialer().DialContext))
	defer c.Close()
	var failed atomic.Int64
	for range burst {
		c.Send(node.Request{Method: http.MethodPost, URL: peer.URL + "/cb", Header: node.Header{}, Body: []byte("x")}, chantest.Timeout,
			func(resp node.Response, err error) {
				if err != nil || resp.Status != http.StatusOK {
					failed.Add(1)
				}
				answered.Done()
			})
	}
	answered.Wait()
	if failed.Load() != 0 || opened.Load() > 2*clientMaxConnsPerHost {
		t.Fatalf("%d of %d sends failed, %d connections opened: want none failed and at most %d connections",
			failed.Load(), burst, opened.Load(), 2*clientMaxConnsPerHost)
	}
	if tr := newTransport(newDNSDialer().DialContext); tr.MaxConnsPerHost != clientMaxConnsPerHost {
		t.Fatalf("transport MaxConnsPerHost %d, want %d", tr.MaxConnsPerHost, clientMaxConnsPerHost)
	}
}
