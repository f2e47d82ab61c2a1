package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
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
	bareRate = drive(b, "http://"+ln.Addr().String()+"/timers")
}

// BenchmarkCreate measures timer creation through HTTP on one real node with
// replication factor 1, and reports its ratio to BenchmarkBareHTTP when that
// ran first in the same process (target at least 0.65).
func BenchmarkCreate(b *testing.B) {
	ln := listenLoopback(b)
	cfg := DefaultConfig()
	cfg.Localhost = ln.Addr().String()
	srv, err := New(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			b.Error(err)
		}
	}()
	rate := drive(b, "http://"+ln.Addr().String()+"/timers")
	if bareRate > 0 {
		b.ReportMetric(rate/bareRate, "ratio")
	}
}

func listenLoopback(b *testing.B) net.Listener {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// drive posts benchBody to url from parallel keep-alive clients and returns
// the request rate.
func drive(b *testing.B, url string) float64 {
	b.Helper()
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.SetParallelism(benchParallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", bytes.NewReader(benchBody))
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
