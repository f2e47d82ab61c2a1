package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/wire"
)

// storedConfig is the configuration of a lone node on addr keeping its
// timers in dir.
func storedConfig(t *testing.T, addr, dir string) config.Node {
	t.Helper()
	cluster := writeFile(t, t.TempDir(), "chronos_cluster.conf", "[cluster]\nlocalhost = "+addr+"\nnode = "+addr+"\n")
	cfg, err := parseAndLoad(append(noFiles, "--cluster-config-file", cluster, "--storage-dir", dir))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// storedServer builds a node on a loopback address keeping its timers in
// dir, serves it, and returns it with its URL and a clean stop.
func storedServer(t *testing.T, ln net.Listener, dir string) (*Server, string, func()) {
	t.Helper()
	srv, err := New(storedConfig(t, ln.Addr().String(), dir), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	stop := func() {
		cancel()
		if err := chantest.Receive(t, served, "Serve return"); err != nil {
			t.Fatalf("Serve: %v", err)
		}
	}
	return srv, "http://" + ln.Addr().String(), stop
}

// TestStorageKeepsTimersAcrossRestart proves the adapter end to end in
// one process: a timer created and answered is held again by a node built
// on the same folder, before that node serves; and a folder whose log is
// corrupt stops the node's start with an error saying so.
func TestStorageKeepsTimersAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, url, stop := storedServer(t, ln, dir)
	resp, err := http.Post(url+"/timers", "application/json", strings.NewReader(`{"timing":{"interval":3600},"callback":{"http":{"uri":"http://127.0.0.1:9/cb","opaque":"kept"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /timers: %d, want 200", resp.StatusCode)
	}
	wid := strings.TrimPrefix(resp.Header.Get("Location"), "/timers/")
	id, _, err := wire.ParseWireID(wid)
	if err != nil {
		t.Fatal(err)
	}
	stop()

	cfg := storedConfig(t, addr, dir)
	srv, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var held node.Timer
	var ok bool
	srv.serial.Do(func() { held, ok = srv.node.Timer(id) })
	if !ok || held.Opaque() != "kept" {
		t.Fatalf("restarted node holds %+v, %t; want the timer created before", held, ok)
	}
	srv.shutdown()

	folder := storageFolder(dir, addr)
	names, _ := os.ReadDir(folder)
	for _, e := range names {
		if strings.HasPrefix(e.Name(), "log-") {
			if err := os.WriteFile(filepath.Join(folder, e.Name()), []byte("not a log at all, and long enough"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := New(cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("New on a corrupt folder: %v, want an error saying it is corrupt", err)
	}
}
