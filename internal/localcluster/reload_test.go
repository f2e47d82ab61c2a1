//go:build unix

package localcluster

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitCeiling bounds each wait of these tests for a process's answer: a
// ceiling against a hang, not a timing.
const waitCeiling = 30 * time.Second

// fakeNode is a shell script that stands for a node: it prints "reloaded"
// on each SIGHUP and exits 0 on SIGTERM, as chronos does. Its sleep holds
// none of its output open, so that its exit ends the output at once,
// however late the sleep is killed on a loaded machine (the harness
// waits pipeDelay for the output after an exit).
const fakeNode = `#!/bin/sh
trap 'echo reloaded' HUP
trap 'kill $s; exit 0' TERM
sleep 1000 >/dev/null 2>&1 & s=$!
echo serving
while :; do wait $s && exit 1; done
`

// watched is the cluster's output: it keeps every line, tells each
// waiter when a line it waits for comes, and fails every write once
// broken is set (a closed terminal).
type watched struct {
	mu     sync.Mutex
	text   strings.Builder
	waits  map[string]chan struct{}
	broken bool
}

func (w *watched) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		return 0, syscall.EIO
	}
	w.text.Write(b)
	for want, ch := range w.waits {
		if strings.Contains(w.text.String(), want) {
			close(ch)
			delete(w.waits, want)
		}
	}
	return len(b), nil
}

// await returns once the output holds want, and fails the test if it does
// not within waitCeiling.
func (w *watched) await(t *testing.T, want string) {
	t.Helper()
	w.mu.Lock()
	ch := make(chan struct{})
	if strings.Contains(w.text.String(), want) {
		close(ch)
	} else {
		w.waits[want] = ch
	}
	w.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(waitCeiling):
		w.mu.Lock()
		defer w.mu.Unlock()
		t.Fatalf("no %q in the output within %v:\n%s", want, waitCeiling, w.text.String())
	}
}

// fakeCluster starts n fake nodes under a Cluster that prints to out.
func fakeCluster(t *testing.T, n int, out *watched) *Cluster {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-chronos")
	if err := os.WriteFile(bin, []byte(fakeNode), 0o700); err != nil {
		t.Fatal(err)
	}
	// A shell cannot trap a signal that was ignored when it started
	// (POSIX), and a test run under nohup, as a detached CI run may be,
	// hands its children SIGHUP ignored. A handler in this process makes
	// them start with the default again (exec resets handled signals,
	// not ignored ones).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	o := Options{Nodes: n, BasePort: DefaultBasePort, Bin: bin}
	c := &Cluster{opts: o, dir: dir, out: newLines(out), files: o.files(dir, o.addrs(), 0), reported: map[*Proc]bool{}}
	for _, f := range c.files {
		p, err := c.launch(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill) // if the test failed before it stopped
		c.nodes = append(c.nodes, p)
		out.await(t, f.name+" | serving")
	}
	return c
}

// TestReloadReachesEveryNode proves that a SIGHUP to the command (a value
// on Wait's reload) has every node reload, says so, and stops none: the
// cluster serves on until its context ends, then every node exits 0.
func TestReloadReachesEveryNode(t *testing.T) {
	out := &watched{waits: map[string]chan struct{}{}}
	c := fakeCluster(t, 2, out)
	ctx, cancel := context.WithCancel(context.Background())
	reload := make(chan os.Signal)
	done := make(chan error, 1)
	go func() { done <- c.Wait(ctx, reload) }()

	reload <- syscall.SIGHUP
	out.await(t, "reload: 2 of 2 nodes re-read "+filepath.Join(c.dir, ClusterFileName))
	out.await(t, "node1 | reloaded")
	out.await(t, "node2 | reloaded")
	for _, p := range c.nodes {
		if p.Exited() {
			t.Fatalf("%s exited on the reload: %v", p.Name(), p.Err())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Wait after the context ended: %v, want every node stopped cleanly", err)
	}
}

// TestReloadWithoutOutputStops proves that a SIGHUP that finds the output
// gone (a closed terminal's) stops every node and returns the output's
// error, instead of leaving nodes that nobody sees.
func TestReloadWithoutOutputStops(t *testing.T) {
	out := &watched{waits: map[string]chan struct{}{}}
	c := fakeCluster(t, 2, out)
	out.mu.Lock()
	out.broken = true
	out.mu.Unlock()
	reload := make(chan os.Signal, 1)
	reload <- syscall.SIGHUP
	done := make(chan error, 1)
	go func() { done <- c.Wait(context.Background(), reload) }()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "output lost on reload") {
			t.Errorf("Wait with the output gone: %v, want the output's EIO", err)
		}
	case <-time.After(waitCeiling):
		t.Fatalf("Wait still serves %v after a reload with no output", waitCeiling)
	}
	for _, p := range c.nodes {
		if !p.Exited() {
			t.Errorf("%s still runs after Wait returned", p.Name())
		}
	}
}
