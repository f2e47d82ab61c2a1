package nemesis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// nodeProc is one chronos node: its files and its current process.
type nodeProc struct {
	name, addr string
	dir        string // its chronos.conf, chronos.log and stderr.log
	args       []string
	bin        string
	ns         *namespace

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current process has ended
	killed  bool          // the nemesis killed the current process
	stopped bool          // the nemesis sent it SIGSTOP
	exits   []string      // exits the nemesis did not cause
}

// writeConfig writes the cluster file, with a new cluster key, and each
// node's own file under dir, allowing callbacks to sinkIP only, and
// returns the node processes (not started). Only the owner may read the
// files: they hold the key.
func writeConfig(dir, bin string, names, addrs []string, sinkIP string) ([]*nodeProc, error) {
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("nemesis: cluster key: %w", err)
	}
	var b strings.Builder
	b.WriteString("# Written by chronos-nemesis: the membership, read by every node.\n[cluster]\n")
	for _, a := range addrs {
		fmt.Fprintf(&b, "node = %s\n", a)
	}
	fmt.Fprintf(&b, "key = %s\n", hex.EncodeToString(key))
	cluster := filepath.Join(dir, "chronos_cluster.conf")
	if err := os.WriteFile(cluster, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("nemesis: %w", err)
	}
	out := make([]*nodeProc, len(addrs))
	for i, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		nd := filepath.Join(dir, names[i])
		local := filepath.Join(nd, "chronos.conf")
		conf := fmt.Sprintf("# Written by chronos-nemesis: %s's own settings.\n"+
			"[http]\nbind-address = %s\nbind-port = %s\n\n[logging]\nlevel = 2\nfolder = %s\n\n"+
			"[callbacks]\nallowed_host = %s\n\n[storage]\ndir = %s\n", names[i], host, port, nd, sinkIP, filepath.Join(nd, "data"))
		if err := os.MkdirAll(nd, 0o700); err != nil {
			return nil, fmt.Errorf("nemesis: %w", err)
		}
		if err := os.WriteFile(local, []byte(conf), 0o600); err != nil {
			return nil, fmt.Errorf("nemesis: %w", err)
		}
		out[i] = &nodeProc{name: names[i], addr: a, dir: nd, bin: bin, args: []string{
			"--local-config-file", local, "--cluster-config-file", cluster,
			"--shared-config-file=", "--dns-config-file="}}
	}
	return out, nil
}

// start starts the node's process on its configuration.
func (p *nodeProc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	errf, err := os.OpenFile(filepath.Join(p.dir, "stderr.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("nemesis: %s: %w", p.name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stderr, cmd.Stdout = errf, errf
	if err := p.ns.start(cmd); err != nil {
		errf.Close()
		return fmt.Errorf("nemesis: start %s: %w", p.name, err)
	}
	p.cmd, p.killed, p.stopped = cmd, false, false
	done := make(chan struct{})
	p.done = done
	go func() {
		err := cmd.Wait()
		errf.Close()
		p.mu.Lock()
		if !p.killed {
			p.exits = append(p.exits, fmt.Sprintf("%s (pid %d) exited by itself: %v", p.name, cmd.Process.Pid, err))
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// errGone is signal's error for a node whose process has ended.
var errGone = errors.New("nemesis: the node's process has ended")

// signal sends sig to the current process.
func (p *nodeProc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("nemesis: %s has no process", p.name)
	}
	select {
	case <-p.done:
		return fmt.Errorf("%w: %s", errGone, p.name)
	default:
	}
	switch sig {
	case syscall.SIGKILL, syscall.SIGTERM:
		p.killed = true
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT:
		p.stopped = false
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("nemesis: %s: %v: %w", p.name, sig, err)
	}
	return nil
}

// kill kills the process with SIGKILL and waits until it has ended.
func (p *nodeProc) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// stop ends the process for good at the end of a run: a stopped process
// is continued first, and one that does not end on SIGTERM within the
// grace is killed.
func (p *nodeProc) stop(grace time.Duration) {
	p.mu.Lock()
	cmd, done, stopped := p.cmd, p.done, p.stopped
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	if stopped {
		_ = p.signal(syscall.SIGCONT)
	}
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.signal(syscall.SIGKILL)
		<-done
	}
}

// unexpected returns the exits the nemesis did not cause.
func (p *nodeProc) unexpected() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.exits...)
}

// waitReady polls the node's /ping through hc until it answers 200, or
// until the deadline.
func waitReady(ctx context.Context, hc *http.Client, addr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/ping", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("nemesis: node %s not ready within %v", addr, within), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
