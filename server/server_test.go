package server

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer serves a real node on a loopback listener with cluster file
// content clusterConf (%[1]s is the node's address) and returns the server,
// its base URL, the cluster file's path, a stop function that returns
// Serve's result, and the channel Serve's result arrives on.
func startServer(t *testing.T, clusterConf string, logs *syncBuffer) (*Server, string, string, func() error, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	path := writeFile(t, t.TempDir(), "chronos_cluster.conf", strings.ReplaceAll(clusterConf, "%[1]s", addr))
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var f Flags
	f.Register(fs)
	if err := fs.Parse([]string{"--cluster-config-file", path}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	stop := func() error {
		cancel()
		return receive(t, served, "Serve return")
	}
	t.Cleanup(func() { cancel() })
	return srv, "http://" + addr, path, stop, served
}

// TestServeReloadShutdown proves the in-process run loop: the node's API is
// served, a changed cluster file is reloaded into the node, a broken one
// leaves the cluster as it was, and shutdown is graceful.
func TestServeReloadShutdown(t *testing.T) {
	logs := &syncBuffer{}
	srv, url, path, stop, _ := startServer(t, "[cluster]\nlocalhost = %[1]s\nnode = %[1]s\n", logs)
	resp, err := http.Post(url+"/timers", "application/json", bytes.NewReader(benchBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /timers: status %d Reason %q, want 200", resp.StatusCode, resp.Header.Get("Reason"))
	}

	self := srv.config().Localhost
	writeFile(t, "", path, "[cluster]\nlocalhost = "+self+"\nnode = "+self+"\nnode = 127.0.0.1:9\n")
	if err := srv.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := srv.config().Cluster.Nodes; len(got) != 2 {
		t.Errorf("Cluster.Nodes = %q, want 2 nodes after reload", got)
	}
	writeFile(t, "", path, "[cluster]\nnode = not an address\n")
	if err := srv.Reload(); err == nil {
		t.Errorf("Reload of a broken file: no error, want one")
	}
	if got := srv.config().Cluster.Nodes; len(got) != 2 {
		t.Errorf("Cluster.Nodes = %q, want the 2 nodes kept after a failed reload", got)
	}
	srv.Resync()
	if err := stop(); err != nil {
		t.Errorf("Serve after shutdown = %v, want nil", err)
	}
	if err := srv.Reload(); err == nil {
		t.Errorf("Reload after shutdown: no error, want one")
	}
	for _, want := range []string{"msg=serving", `msg="cluster reloaded"`, `msg="resync requested"`, "msg=stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// TestServeStopsOnNodePanic proves that a panic inside the node stops the
// run loop with that panic as the error, so the process exits loudly.
func TestServeStopsOnNodePanic(t *testing.T) {
	srv, _, _, _, served := startServer(t, "", &syncBuffer{})
	func() {
		defer func() { _ = recover() }()
		srv.serial.Do(func() { panic("broken invariant") })
	}()
	if err := receive(t, served, "Serve return"); err == nil || !strings.Contains(err.Error(), "node panicked: broken invariant") {
		t.Errorf("Serve = %v, want the node's panic", err)
	}
}
