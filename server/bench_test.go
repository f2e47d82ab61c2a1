package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
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

// benchBodyRF2 is benchBody with replication factor 2.
var benchBodyRF2 = bytes.Replace(benchBody, []byte(`"replication-factor":1`), []byte(`"replication-factor":2`), 1)

// startCluster starts n nodes on loopback, one cluster with a key, and
// returns the URL of each one's /timers; they stop when b ends.
func startCluster(b *testing.B, n int) []string {
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
		srv, err := New(cfg, nil)
		if err != nil {
			b.Fatal(err)
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

func listenLoopback(b *testing.B) net.Listener {
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
