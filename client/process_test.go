//go:build unix

// The cluster tests kill nodes with SIGKILL, so they exist only where it
// does.

package client_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/proctest"
)

// processWait bounds every wait on a process: a ceiling against hangs,
// never a measured timing.
const processWait = 20 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	proctest.Cleanup()
	os.Exit(code)
}

// process is a running chronos node.
type process struct {
	addr   string
	cmd    *exec.Cmd
	log    *serveWatch
	exited chan error
}

// kill stops the process with SIGKILL and waits until it is gone.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(processWait):
		t.Fatalf("%s still running %v after SIGKILL", p.addr, processWait)
	}
}

// startCluster starts n chronos processes as one cluster on loopback
// ports, configured with INI files as an operator would (addresses only:
// each node derives its instance number), and waits until each serves.
// If another process takes a port between the probe and the bind, it
// starts the cluster again on other ports.
func startCluster(t *testing.T, n int) []*process {
	t.Helper()
	bin := proctest.Chronos(t)
	for range 3 {
		addrs := make([]string, n)
		for i := range addrs {
			addrs[i] = proctest.FreeAddr(t)
		}
		var members []*process
		var err error
		for _, addr := range addrs {
			var p *process
			if p, err = startMember(t, bin, addr, addrs); err != nil {
				break
			}
			members = append(members, p)
		}
		if err == nil {
			return members
		}
		for _, p := range members {
			_ = p.cmd.Process.Kill()
		}
		if !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
	t.Fatal("no free ports after 3 attempts")
	return nil
}

func startMember(t *testing.T, bin, addr string, addrs []string) (*process, error) {
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(addr)
	local := filepath.Join(dir, "chronos.conf")
	cluster := filepath.Join(dir, "chronos_cluster.conf")
	conf := fmt.Sprintf("[cluster]\nlocalhost = %s\n", addr)
	for _, a := range addrs {
		conf += "node = " + a + "\n"
	}
	if err := os.WriteFile(local, fmt.Appendf(nil, "[http]\nbind-address = %s\nbind-port = %s\n\n[logging]\nlevel = 3\n", host, port), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cluster, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &process{addr: addr, log: newServeWatch(), exited: make(chan error, 1)}
	// No other file: never the machine's /etc.
	p.cmd = exec.Command(bin, "--shared-config-file=", "--dns-config-file=", "--local-config-file", local, "--cluster-config-file", cluster,
		"--storage-dir", filepath.Join(dir, "data"))
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill() // harmless once it has exited
		if t.Failed() {
			t.Logf("chronos %s log:\n%s", addr, p.log)
		}
	})
	select {
	case <-p.log.serving:
		return p, nil
	case err := <-p.exited:
		return nil, fmt.Errorf("chronos %s exited before serving: %v\n%s", addr, err, p.log)
	case <-time.After(processWait):
		return nil, fmt.Errorf("chronos %s did not serve within %v\n%s", addr, processWait, p.log)
	}
}

// serveWatch keeps a process's log and closes serving once the process
// logs that it serves.
type serveWatch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	serving chan struct{}
}

func newServeWatch() *serveWatch { return &serveWatch{serving: make(chan struct{})} }

func (w *serveWatch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	select {
	case <-w.serving:
	default:
		if bytes.Contains(w.buf.Bytes(), []byte("msg=serving")) {
			close(w.serving)
		}
	}
	return len(b), nil
}

func (w *serveWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
