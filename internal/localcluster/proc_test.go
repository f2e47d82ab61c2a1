//go:build unix

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// script is a Spec that runs the shell script body as a stand-in for a
// node, serving (if at all) at addr. The process is killed when the test
// ends.
func script(t *testing.T, addr, body string) *Proc {
	t.Helper()
	p, err := Launch(Spec{Name: "fake", Bin: "/bin/sh", Args: []string{"-c", body}, Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// statusServer answers GET /status with the address *self holds.
func statusServer(t *testing.T, self func(addr string) string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/status" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"address":%q}`, self(r.Host))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestAwaitReadyAsksForTheNodesOwnAddress proves that a process is ready
// once its /status answers with its own address, and not while another
// node answers there (a process that took the port): the wait goes on.
func TestAwaitReadyAsksForTheNodesOwnAddress(t *testing.T) {
	var asks atomic.Int32
	addr := statusServer(t, func(host string) string {
		if asks.Add(1) == 1 {
			return "127.0.0.1:1"
		}
		return host
	})
	p := script(t, addr, "exec sleep 1000")
	if err := p.askStatus(context.Background(), http.DefaultClient); err == nil || err.Error() != "/status is 127.0.0.1:1's, not "+addr+"'s" {
		t.Errorf("ask with another node's /status = %v, want it named", err)
	}
	asks.Store(0)
	if err := p.AwaitReady(context.Background(), time.Minute); err != nil || asks.Load() < 2 {
		t.Errorf("AwaitReady = %v after %d asks, want nil once its own address answered, the second", err, asks.Load())
	}
}

// TestAwaitReadyAsksForTheNodesOwnProcess proves that a process is not
// ready while another process answers /status with the very address it
// was given (another test's node that took the same port a moment
// before, found on a loaded machine): the status names its pid, and only
// the launched process's counts.
func TestAwaitReadyAsksForTheNodesOwnProcess(t *testing.T) {
	var pid atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"address":%q,"pid":%d}`, r.Host, pid.Load())
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	p := script(t, addr, "exec sleep 1000")
	pid.Store(int64(p.Pid()) + 1)
	want := fmt.Sprintf("/status is process %d's, not %d's", p.Pid()+1, p.Pid())
	if err := p.askStatus(context.Background(), http.DefaultClient); err == nil || err.Error() != want {
		t.Errorf("ask answered by another process = %v, want %q", err, want)
	}
	pid.Store(int64(p.Pid()))
	if err := p.askStatus(context.Background(), http.DefaultClient); err != nil {
		t.Errorf("ask answered by the process itself = %v, want nil", err)
	}
}

// TestAwaitReadyTellsATakenPort proves that a node that exits because its
// port is taken fails AwaitReady with ErrPortTaken, so that the caller
// starts it again on another port, and that another early exit does not.
func TestAwaitReadyTellsATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing answers there: the process's exit ends the wait
	p := script(t, addr, "echo 'listen tcp "+addr+": bind: address already in use' >&2; exit 1")
	if err := p.AwaitReady(context.Background(), time.Minute); !errors.Is(err, ErrPortTaken) {
		t.Errorf("AwaitReady of a node whose port was taken = %v, want ErrPortTaken", err)
	}
	q := script(t, addr, "echo 'bad configuration' >&2; exit 2")
	if err := q.AwaitReady(context.Background(), time.Minute); err == nil || errors.Is(err, ErrPortTaken) ||
		!strings.Contains(err.Error(), "exited before it served") {
		t.Errorf("AwaitReady of a node that exits = %v, want an exit that is not ErrPortTaken", err)
	}
}

// TestOnFreeAddrsStartsAgainOnATakenPort proves that a try that finds a
// port taken is called again on fresh loopback addresses, and that any
// other error ends the tries at once.
func TestOnFreeAddrsStartsAgainOnATakenPort(t *testing.T) {
	var seen [][]string
	err := OnFreeAddrs(3, func(addrs []string) error {
		seen = append(seen, addrs)
		if len(seen) < 3 {
			return fmt.Errorf("node2: %w", ErrPortTaken)
		}
		return nil
	})
	if err != nil || len(seen) != 3 {
		t.Fatalf("OnFreeAddrs = %v after %d tries, want nil after 3", err, len(seen))
	}
	for _, addrs := range seen {
		distinct := map[string]bool{}
		for _, a := range addrs {
			host, _, _ := net.SplitHostPort(a)
			if host != Host {
				t.Errorf("address %s is not on %s", a, Host)
			}
			distinct[a] = true
		}
		if len(distinct) != 3 {
			t.Errorf("addresses %v, want 3 distinct ones", addrs)
		}
	}
	other := errors.New("bad configuration")
	tries := 0
	if err := OnFreeAddrs(1, func([]string) error { tries++; return other }); !errors.Is(err, other) || tries != 1 {
		t.Errorf("OnFreeAddrs with another error = %v after %d tries, want it after 1", err, tries)
	}
}

// TestStopKillsAProcessThatIgnoresSIGTERM proves that Stop ends a process
// that ignores SIGTERM with SIGKILL after the grace, says so, and that
// Stop on a process that exits on SIGTERM returns its exit.
func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	p := script(t, "", "trap '' TERM; echo ready; exec sleep 1000")
	if err := p.AwaitLog("ready", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(10 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "was killed") || !p.Exited() {
		t.Errorf("Stop of a process that ignores SIGTERM = %v (exited %v), want it killed", err, p.Exited())
	}
	q := script(t, "", "echo ready; exec sleep 1000")
	if err := q.AwaitLog("ready", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := q.Stop(time.Minute); err == nil || !strings.Contains(err.Error(), "signal: terminated") || !q.Killed() {
		t.Errorf("Stop of a process that ends on SIGTERM = %v (killed %v), want its exit by the signal", err, q.Killed())
	}
}

// TestLogKeepsItsTail proves that a process's log stays bounded and keeps
// its latest output.
func TestLogKeepsItsTail(t *testing.T) {
	l := newLog()
	line := []byte(strings.Repeat("x", 1023) + "\n")
	for range 2 * maxLogBytes / len(line) {
		l.Write(line)
	}
	l.Write([]byte("last line\n"))
	s := l.String()
	if len(s) > maxLogBytes || !strings.HasSuffix(s, "last line\n") || !strings.HasPrefix(s, "[earlier output dropped]") {
		t.Errorf("log of %d bytes ending %q, want at most %d ending with the last line", len(s), s[len(s)-20:], maxLogBytes)
	}
}
