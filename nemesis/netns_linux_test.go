package nemesis

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNamespacesThroughTheSwitch proves the namespaces reach each other
// only through the switch: a node's namespace reaches the clients'
// listener, a drop rule cuts it, a held connection arrives at the heal,
// and tearing down leaves no namespace behind. It needs root; elsewhere
// it says so and skips.
func TestNamespacesThroughTheSwitch(t *testing.T) {
	if err := Supported(); err != nil {
		t.Skipf("network namespaces cannot be made here, so the namespace test cannot run: %v (run as root on Linux with /dev/net/tun)", err)
	}
	c := DefaultConfig()
	c.Nodes, c.Prefix = 2, "chrnemtest-"
	if _, err := removeStale(c.Prefix); err != nil {
		t.Fatal(err)
	}
	e, err := setUp(c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.tearDown(); err != nil {
			t.Error(err)
		}
		left, _ := filepath.Glob(filepath.Join(netnsDir, c.Prefix+"*"))
		if len(left) > 0 {
			t.Errorf("got namespaces %v after the tear-down, want none", left)
		}
	}()
	clients := e.nss[e.top.clients()]
	ln, err := clients.listen(e.top.sinkHost())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(conn, "hello")
			conn.Close()
		}
	}()
	read := func(within time.Duration) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		conn, err := e.nss[0].dial(ctx, "tcp", e.top.sinkHost())
		if err != nil {
			return "", err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(within))
		b, err := io.ReadAll(conn)
		return string(b), err
	}
	if got, err := read(5 * time.Second); got != "hello" {
		t.Fatalf("node 0 to the clients' namespace: got %q, %v, want hello", got, err)
	}
	if err := e.sw.Set(0, e.top.clients(), Rule{Drop: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := read(300 * time.Millisecond); err == nil {
		t.Fatalf("through a drop rule: got %q, want no connection", got)
	}
	e.sw.Clear()
	e.sw.heldHook = make(chan struct{}, 1)
	if err := e.sw.Set(e.top.clients(), 0, Rule{Hold: true}); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { got, _ := read(10 * time.Second); done <- got }()
	<-e.sw.heldHook // the answer to the SYN is held
	e.sw.Clear()
	if got := <-done; got != "hello" {
		t.Errorf("through a hold released at the heal: got %q, want hello", got)
	}
	if _, err := os.Stat(filepath.Join(netnsDir, fmt.Sprintf("%s%d-n1", c.Prefix, os.Getpid()))); err != nil {
		t.Errorf("namespace n1 during the run: %v", err)
	}
}

// TestOwnerAlive proves a namespace is stale only when the run that
// named it has ended: a run still going keeps its namespaces.
func TestOwnerAlive(t *testing.T) {
	for rest, want := range map[string]bool{
		fmt.Sprintf("%d-n1", os.Getpid()): true,
		"999999999-n1":                    false,
		"clients":                         false,
		"-1-n1":                           false,
	} {
		if got := ownerAlive(rest); got != want {
			t.Errorf("ownerAlive(%q): got %v, want %v", rest, got, want)
		}
	}
}
