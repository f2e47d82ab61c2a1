package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/internal/logtest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/observe"
)

// startServer serves a real node on a loopback listener with cluster file
// content clusterConf (%[1]s is the node's address) and returns the server,
// its base URL, the cluster file's path, a stop function that returns
// Serve's result, and the channel Serve's result arrives on.
func startServer(t *testing.T, clusterConf string, logs *logtest.Buffer) (*Server, string, string, func() error, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	path := writeFile(t, t.TempDir(), "chronos_cluster.conf", strings.ReplaceAll(clusterConf, "%[1]s", addr))
	cfg, err := parseAndLoad(append(noFiles, "--cluster-config-file", path))
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
		return chantest.Receive(t, served, "Serve return")
	}
	t.Cleanup(func() { cancel() })
	return srv, "http://" + addr, path, stop, served
}

// TestServeReloadShutdown proves the in-process run loop: the node's API is
// served, a changed cluster file is reloaded into the node, a broken one
// leaves the cluster as it was, and shutdown is graceful.
func TestServeReloadShutdown(t *testing.T) {
	logs := &logtest.Buffer{}
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
	srv, _, _, _, served := startServer(t, "", &logtest.Buffer{})
	func() {
		defer func() { _ = recover() }()
		srv.serial.Do(func() { panic("broken invariant") })
	}()
	if err := chantest.Receive(t, served, "Serve return"); err == nil || !strings.Contains(err.Error(), "node panicked: broken invariant") {
		t.Errorf("Serve = %v, want the node's panic", err)
	}
}

// TestHeadPing proves that HEAD /ping through the real HTTP server answers
// 200 with an empty body, as a load balancer's health check expects.
func TestHeadPing(t *testing.T) {
	_, url, _, _, _ := startServer(t, "", &logtest.Buffer{})
	status, body := fetch(t, http.MethodHead, url+"/ping")
	if status != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD /ping: status %d body %q, want 200 and no body", status, body)
	}
}

// fetch makes a request without a body and returns the status and body.
func fetch(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestStartLog proves the start-up record: the derived instance number,
// the membership, the sites, whether a key is set (never the key) and the
// callback allow-list; and the loud warning for a cluster without a key,
// which a lone node does not get.
func TestStartLog(t *testing.T) {
	const openWarning = `level=WARN msg="no cluster key: the internal API (replication, pop notices, tombstones, resync) trusts the members' IP addresses alone`
	tests := []struct {
		name, cluster string
		others        []string // the other members
		want, lacks   []string
	}{
		{"lone node", "[cluster]\nlocalhost = %[1]s\n", nil,
			[]string{"nodes=[%[1]s] joining=[] leaving=[]", `local_site=site1 remote_sites=[] replicate_across_sites=false key_set=false accepted_key_set=false tls=false mutual_tls=false callback_hosts=any`}, []string{openWarning}},
		{"cluster without key", "[cluster]\nlocalhost = %[1]s\nnode = %[1]s\nnode = 127.0.0.1:9\n", []string{"127.0.0.1:9"},
			[]string{`nodes="[%[1]s 127.0.0.1:9]"`, `key_set=false`, openWarning}, nil},
		{"remote site without key", "[cluster]\nlocalhost = %[1]s\n[sites]\nlocal_site = a\nremote_site = b=127.0.0.1:9\n", nil,
			[]string{`local_site=a remote_sites="[b=127.0.0.1:9]"`, openWarning}, nil},
		{"cluster with key", "[cluster]\nlocalhost = %[1]s\nnode = %[1]s\njoining = 127.0.0.1:9\nkey = 0123456789-sesame\n", []string{"127.0.0.1:9"},
			[]string{"joining=[127.0.0.1:9]", `key_set=true`}, []string{openWarning, "sesame"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logtest.Buffer{}
			_, url, _, _, _ := startServer(t, tt.cluster, logs)
			// Served only after the start-up record is written.
			resp, err := http.Get(url + "/ping")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			self := strings.TrimPrefix(url, "http://")
			m := node.Membership{Nodes: []string{self}}
			if strings.Contains(tt.cluster, "joining") {
				m.Joining = tt.others
			} else {
				m.Nodes = append(m.Nodes, tt.others...)
			}
			ids, err := node.InstanceIDs(m)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string{fmt.Sprintf(`msg=starting node=%s instance=%d instance_derived=true nodes=`, self, ids[self])}, tt.want...)
			got := logs.String()
			for _, w := range want {
				if w = strings.ReplaceAll(w, "%[1]s", self); !strings.Contains(got, w) {
					t.Errorf("log lacks %s:\n%s", w, got)
				}
			}
			for _, l := range tt.lacks {
				if strings.Contains(got, l) {
					t.Errorf("log holds %s:\n%s", l, got)
				}
			}
		})
	}
}

// TestMetricsServed proves a server answers GET /metrics with its
// Prometheus metrics, ahead of the node, which never sees the request.
func TestMetricsServed(t *testing.T) {
	_, url, _, _, _ := startServer(t, "", &logtest.Buffer{})
	status, body := fetch(t, http.MethodGet, url+observe.MetricsPath)
	if status != http.StatusOK || !strings.Contains(body, "chronos_outbound_queue_depth 0") {
		t.Errorf("GET /metrics: status %d body %q, want 200 and the queue depth", status, body)
	}
}
