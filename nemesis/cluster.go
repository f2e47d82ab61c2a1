package nemesis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chronos-timer/chronos/internal/localcluster"
)

// nodeProc is one chronos node: its files and its current process, run
// by the process harness of internal/localcluster.
type nodeProc struct {
	name, addr string
	dir        string // its chronos.conf, chronos.log and stderr.log
	args       []string
	bin        string
	ns         *namespace
	hc         *http.Client // asks for its /status from the clients' namespace

	mu      sync.Mutex
	proc    *localcluster.Proc
	stopped bool          // the nemesis sent it SIGSTOP
	exits   []string      // exits the nemesis did not cause
	watched chan struct{} // closed once the current process's exit is in exits, if it belongs there
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

// start starts the node's process on its configuration, inside its
// namespace.
func (p *nodeProc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	errf, err := os.OpenFile(filepath.Join(p.dir, "stderr.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("nemesis: %s: %w", p.name, err)
	}
	proc, err := localcluster.Launch(localcluster.Spec{Name: p.name, Bin: p.bin, Args: p.args, Addr: p.addr,
		Output: errf, Starter: p.ns.start, Client: p.hc})
	if err != nil {
		errf.Close()
		return fmt.Errorf("nemesis: %w", err)
	}
	watched := make(chan struct{})
	p.proc, p.stopped, p.watched = proc, false, watched
	go func() {
		defer close(watched)
		<-proc.Done()
		errf.Close()
		if !proc.Killed() {
			p.mu.Lock()
			p.exits = append(p.exits, fmt.Sprintf("%s (pid %d) exited by itself: %v", p.name, proc.Pid(), proc.Err()))
			p.mu.Unlock()
		}
	}()
	return nil
}

// errGone is signal's error for a node whose process has ended.
var errGone = errors.New("nemesis: the node's process has ended")

// signal sends sig to the current process.
func (p *nodeProc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return fmt.Errorf("nemesis: %s has no process", p.name)
	}
	if p.proc.Exited() {
		return fmt.Errorf("%w: %s", errGone, p.name)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT:
		p.stopped = false
	}
	if err := p.proc.Signal(sig); err != nil {
		return fmt.Errorf("nemesis: %s: %v: %w", p.name, sig, err)
	}
	return nil
}

// current returns the current process, nil before the first start.
func (p *nodeProc) current() *localcluster.Proc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc
}

// kill kills the process with SIGKILL and waits until it has ended.
func (p *nodeProc) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.current().Done()
	return nil
}

// stop ends the process for good at the end of a run: a stopped process
// is continued first, and one that does not end on SIGTERM within the
// grace is killed.
func (p *nodeProc) stop(grace time.Duration) {
	p.mu.Lock()
	proc, stopped, watched := p.proc, p.stopped, p.watched
	p.mu.Unlock()
	if proc == nil {
		return
	}
	if !proc.Exited() {
		if stopped {
			_ = p.signal(syscall.SIGCONT)
		}
		_ = proc.Stop(grace)
	}
	<-watched
}

// unexpected returns the exits the nemesis did not cause.
func (p *nodeProc) unexpected() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.exits...)
}

// waitReady waits until the node's /status, asked from the clients'
// namespace, answers with its address, or until the deadline.
func (p *nodeProc) waitReady(ctx context.Context, within time.Duration) error {
	proc := p.current()
	if proc == nil {
		return fmt.Errorf("nemesis: %s has no process", p.name)
	}
	return proc.AwaitReady(ctx, within)
}
