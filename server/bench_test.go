package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/wire"
)

// benchBody is a small client create: replication factor 1, due in a day,
// so no callback fires during the run.
var benchBody = []byte(`{"timing":{"interval":86400},"callback":{"http":{"uri":"http://127.0.0.1:9/cb","opaque":"bench"}},"reliability":{"replication-factor":1}}`)

// benchParallelism is goroutines per GOMAXPROCS for the load generator: an
// HTTP round trip mostly waits, so one per core would under-load both
// servers alike.
const benchParallelism = 8

// bareRate is the request rate the last BenchmarkBareHTTP run measured, so
// that BenchmarkCreate can report its ratio to it from the same run.
var bareRate float64

// BenchmarkBareHTTP measures a bare net/http handler that reads the same
// small JSON POST and answers 200 with a Location: the baseline of docs/design.md
// section 5.
func BenchmarkBareHTTP(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", "/timers/0ca78e33cd4000000012004040000000")
		w.WriteHeader(http.StatusOK)
	})
	ln := listenLoopback(b)
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	bareRate = drive(b, benchBody, "http://"+ln.Addr().String()+"/timers")
}

// BenchmarkCreate measures timer creation through HTTP on one real node with
// replication factor 1, and reports its ratio to BenchmarkBareHTTP when that
// ran first in the same process (target at least 0.65).
func BenchmarkCreate(b *testing.B) {
	urls := startCluster(b, 1)
	rate := drive(b, benchBody, urls...)
	if bareRate > 0 {
		b.ReportMetric(rate/bareRate, "ratio")
	}
}

// BenchmarkCreateReplicated measures timer creation through HTTP on three
// real nodes in this process with replication factor 2, the creates spread
// over the three, and reports its ratio to BenchmarkBareHTTP when that ran
// first in the same process (target at least 0.3). Each create is one
// client exchange and, on average, four thirds of an exchange between
// nodes; its allocations are the three nodes' and the client's.
func BenchmarkCreateReplicated(b *testing.B) {
	urls := startCluster(b, 3)
	rate := drive(b, benchBodyRF2, urls...)
	if bareRate > 0 {
		b.ReportMetric(rate/bareRate, "ratio")
	}
}

// BenchmarkCreateReplicatedH2C is BenchmarkCreateReplicated with the
// requests between nodes sent each alone over unencrypted HTTP/2
// (transport.Client.UseUnencryptedHTTP2) instead of in batches over the
// workers' own HTTP/1.1 connections: the measurement of docs/design.md
// section 5 that chose the batches.
func BenchmarkCreateReplicatedH2C(b *testing.B) {
	urls := startServers(b, 3, useUnencryptedHTTP2)
	rate := drive(b, benchBodyRF2, urls...)
	if bareRate > 0 {
		b.ReportMetric(rate/bareRate, "ratio")
	}
}

// useUnencryptedHTTP2 makes s take HTTP/2 without TLS as well as
// HTTP/1.1, and send the requests between nodes each alone over it.
func useUnencryptedHTTP2(s *Server) {
	s.http.Protocols = new(http.Protocols)
	s.http.Protocols.SetHTTP1(true)
	s.http.Protocols.SetUnencryptedHTTP2(true)
	s.client.UseUnencryptedHTTP2()
}

// benchBodyRF2 is benchBody with replication factor 2.
var benchBodyRF2 = bytes.Replace(benchBody, []byte(`"replication-factor":1`), []byte(`"replication-factor":2`), 1)

// startCluster starts n nodes on loopback, one cluster with a key, each
// configured further by the options, and returns the URL of each one's
// /timers; they stop when b ends.
func startCluster(b *testing.B, n int, options ...func(*config.Node)) []string {
	b.Helper()
	return startServers(b, n, nil, options...)
}

// startServers is startCluster, each server changed by adjust, if not
// nil, before it serves.
func startServers(b testing.TB, n int, adjust func(*Server), options ...func(*config.Node)) []string {
	b.Helper()
	lns := make([]net.Listener, n)
	var m node.Membership
	for i := range lns {
		lns[i] = listenLoopback(b)
		m.Nodes = append(m.Nodes, lns[i].Addr().String())
	}
	urls := make([]string, n)
	for i, ln := range lns {
		cfg := config.Default()
		cfg.Localhost = ln.Addr().String()
		if n > 1 {
			cfg.Cluster = m
			cfg.ClusterKey = "0123456789abcdef0123456789abcdef"
		}
		for _, o := range options {
			o(&cfg)
		}
		srv, err := New(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		if adjust != nil {
			adjust(srv)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, ln) }()
		b.Cleanup(func() {
			cancel()
			if err := <-served; err != nil {
				b.Error(err)
			}
		})
		urls[i] = "http://" + ln.Addr().String() + "/timers"
	}
	return urls
}

func listenLoopback(b testing.TB) net.Listener {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// drive posts body from parallel keep-alive clients, to each of urls in
// turn, and returns the request rate.
func drive(b *testing.B, body []byte, urls ...string) float64 {
	b.Helper()
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.SetParallelism(benchParallelism)
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			url := urls[next.Add(1)%uint64(len(urls))]
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d Reason %q, want 200", resp.StatusCode, resp.Header.Get("Reason"))
				return
			}
		}
	})
	b.StopTimer()
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "req/s")
	return rate
}

// popBody is a timer due %d seconds after it is created, calling back
// the sink at %s with the opaque data "bench".
const popBody = `{"timing":{"interval":%d},"callback":{"http":{"uri":"%s","opaque":"bench"}},"reliability":{"replication-factor":1}}`

// popBurst is the most timers BenchmarkPop has fall due at one instant:
// well within what the node's client queues for one host
// (transport.clientMaxQueuePerHost), beyond which a burst is shed.
const popBurst = 10000

// BenchmarkBarePop measures a plain Go client POSTing a pop's request (its
// headers and opaque body) to a loopback sink: the baseline of the pop
// rows of docs/design.md section 5. Run before BenchmarkPop, it sets the
// rate that one reports its ratio to.
func BenchmarkBarePop(b *testing.B) {
	s := startSink(b)
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, DisableCompression: true}
	defer tr.CloseIdleConnections()
	b.SetParallelism(benchParallelism)
	b.ReportAllocs()
	b.ResetTimer()
	var seq atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader([]byte("bench")))
			if err != nil {
				b.Error(err)
				return
			}
			req.Header.Set(wire.HeaderSequenceNumber, "1")
			req.Header.Set(wire.HeaderTimerID, strconv.FormatUint(seq.Add(1), 16))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.StopTimer()
	barePopRate = float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(barePopRate, "pops/s")
}

// barePopRate is the rate the last BenchmarkBarePop run measured.
var barePopRate float64

// BenchmarkPop measures pops through the real HTTP client: one node on a
// mock clock holds b.N timers, created untimed, due in bursts of popBurst
// a second apart; the benchmark times (and counts the allocations of) the
// node popping every one into a loopback sink, the sink's own included as
// in BenchmarkBarePop, moving the clock to each burst once the sink has
// every pop of the one before. It reports its ratio to BenchmarkBarePop
// when that ran first in the same process.
func BenchmarkPop(b *testing.B) {
	s := startSink(b)
	mock := clock.NewMock()
	mock.Set(time.Now())
	urls := startCluster(b, 1, func(cfg *config.Node) { cfg.Clock = mock })
	b.StopTimer()
	createAll(b, b.N, func(i int) []byte { return fmt.Appendf(nil, popBody, 1+i/popBurst, s.url) }, urls[0])
	b.ReportAllocs()
	b.ResetTimer()
	b.StartTimer()
	// The node pops a burst in bounded rounds, each on an alarm of its
	// own: within a burst the mock clock moves on a millisecond every
	// real millisecond.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for due := 0; due < b.N; {
		mock.Add(time.Second)
		due = min(due+popBurst, b.N)
		last := time.Now()
		for s.count.Load() < int64(due) {
			select {
			case <-s.arrived:
				last = time.Now()
			case <-tick.C:
				mock.Add(time.Millisecond)
			}
			if time.Since(last) > popStall {
				b.Fatalf("the sink has %d of %d pops, none new for %v", s.count.Load(), due, popStall)
			}
		}
	}
	b.StopTimer()
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "pops/s")
	if barePopRate > 0 {
		b.ReportMetric(rate/barePopRate, "ratio")
	}
}

// popStall is how long BenchmarkPop waits for a pop before it fails
// instead of waiting for ever for pops the node gave up.
const popStall = 30 * time.Second

// sink is a loopback callback receiver that counts what it is sent.
type sink struct {
	url     string
	count   atomic.Int64
	arrived chan struct{} // a token per request, dropped when one waits
}

// startSink starts a sink that answers 200 to every request until b ends.
func startSink(b *testing.B) *sink {
	b.Helper()
	s := &sink{arrived: make(chan struct{}, 1)}
	ln := listenLoopback(b)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.count.Add(1)
		select {
		case s.arrived <- struct{}{}:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { srv.Close() })
	s.url = "http://" + ln.Addr().String() + "/cb"
	return s
}

// createAll creates n timers at url from parallel clients, timer i of
// body(i).
func createAll(b *testing.B, n int, body func(i int) []byte, url string) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				resp, err := client.Post(url, "application/json", bytes.NewReader(body(int(i))))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("create: status %d Reason %q, want 200", resp.StatusCode, resp.Header.Get("Reason"))
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestCreateReplicatedOverUnencryptedHTTP2 proves that the other arm of
// BenchmarkCreateReplicatedH2C measures what it says: with
// useUnencryptedHTTP2, requests between nodes arrive as HTTP/2, none in
// a batch, and none fails. The creates are of factor 3, whose quorum of
// two is met only once a peer has answered: each is answered after at
// least one request between nodes arrived.
func TestCreateReplicatedOverUnencryptedHTTP2(t *testing.T) {
	var h2 atomic.Int64
	var servers []*Server
	urls := startServers(t, 3, func(s *Server) {
		useUnencryptedHTTP2(s)
		inner := s.http.Handler
		s.http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 {
				h2.Add(1)
			}
			inner.ServeHTTP(w, r)
		})
		servers = append(servers, s)
	})
	const creates = 30
	rf3 := bytes.Replace(benchBody, []byte(`"replication-factor":1`), []byte(`"replication-factor":3`), 1)
	for i := range creates {
		resp, err := http.Post(urls[i%len(urls)], "application/json", bytes.NewReader(rf3))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("create %d: status %d", i, resp.StatusCode)
		}
	}
	var ok, failed, batches uint64
	for _, s := range servers {
		st := s.client.Stats()
		ok, failed, batches = ok+st.OK, failed+st.Failed, batches+st.PeerBatches
	}
	if h2.Load() < creates || failed != 0 || batches != 0 {
		t.Errorf("%d requests arrived over HTTP/2 of %d answered between nodes (want at least one a create, %d), %d failed, %d batches (want none)",
			h2.Load(), ok, creates, failed, batches)
	}
}
