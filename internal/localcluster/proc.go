package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// statusEvery is how often a starting node's /status is asked again.
const statusEvery = 50 * time.Millisecond

// pipeDelay bounds how long a process's output is still read after it
// exited, should a child it left behind hold its output open: Done must
// not wait on a process the harness did not start.
const pipeDelay = 5 * time.Second

// ErrPortTaken is the error of a node that could not listen because its
// port was taken, by a process that took it between the harness's probe
// and the node's bind: start it again on other ports (OnFreeAddrs).
var ErrPortTaken = errors.New("localcluster: port taken")

// Spec says how to start one chronos process.
type Spec struct {
	// Name names the process in messages: "node1".
	Name string
	// Bin is the chronos binary, Args its command line.
	Bin  string
	Args []string
	// Addr is the host:port where the node serves, whose /status says when
	// it is ready; empty for a process that serves nothing (`chronos
	// cluster` itself).
	Addr string
	// Self is the address the node knows itself by, which its /status
	// gives, when its cluster file names one other than Addr (a node
	// behind a proxy); empty is Addr.
	Self string
	// Output receives the process's stdout and stderr, besides its Log;
	// nil leaves them in the Log only.
	Output io.Writer
	// Client asks for /status; nil is plain HTTP. Scheme is "https" for a
	// node that serves TLS; empty is "http".
	Client *http.Client
	Scheme string
	// Starter starts the command; nil is cmd.Start. The nemesis starts
	// nodes inside network namespaces.
	Starter func(*exec.Cmd) error
	// OwnGroup puts the process in a process group of its own, so that a
	// terminal's Ctrl-C reaches only the process that started it.
	OwnGroup bool
}

// Proc is one running (or ended) chronos process. Its methods are safe
// for concurrent use.
type Proc struct {
	spec Spec
	cmd  *exec.Cmd
	log  *Log
	done chan struct{} // closed when the process has ended
	err  error         // how it ended, once done is closed

	mu     sync.Mutex
	killed bool // the harness sent it SIGKILL or SIGTERM
}

// Launch starts the process spec says; AwaitReady waits until it serves.
// Its output goes to its Log, and to spec.Output if set; once it ends, its
// exit is in Err.
func Launch(spec Spec) (*Proc, error) {
	p := &Proc{spec: spec, log: newLog(), done: make(chan struct{})}
	var out io.Writer = p.log
	if spec.Output != nil {
		out = io.MultiWriter(p.log, spec.Output)
	}
	p.cmd = exec.Command(spec.Bin, spec.Args...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.WaitDelay = pipeDelay
	if spec.OwnGroup {
		p.cmd.SysProcAttr = ownGroup()
	}
	start := p.cmd.Start
	if spec.Starter != nil {
		start = func() error { return spec.Starter(p.cmd) }
	}
	if err := start(); err != nil {
		return nil, fmt.Errorf("localcluster: start %s: %w", spec.Name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		if f, ok := spec.Output.(interface{ Flush() }); ok {
			f.Flush()
		}
		close(p.done)
	}()
	return p, nil
}

// Spec returns what p was started from: Launch(p.Spec()) starts it again.
func (p *Proc) Spec() Spec { return p.spec }

// Name is the process's name, Addr where it serves, Pid its process id.
func (p *Proc) Name() string { return p.spec.Name }
func (p *Proc) Addr() string { return p.spec.Addr }
func (p *Proc) Pid() int     { return p.cmd.Process.Pid }

// Log is the process's output.
func (p *Proc) Log() *Log { return p.log }

// Done is closed once the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is how the process ended: nil for exit status 0. It is valid once
// Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process, unless it has ended.
func (p *Proc) Signal(sig os.Signal) error {
	if p.Exited() {
		return fmt.Errorf("localcluster: %s has exited: %v", p.spec.Name, exitText(p.err))
	}
	if sig == os.Kill || sig == stopSignal {
		p.mu.Lock()
		p.killed = true
		p.mu.Unlock()
	}
	return p.cmd.Process.Signal(sig)
}

// Killed reports whether the harness asked the process to end (Stop,
// Kill, or Signal with SIGTERM or SIGKILL): an exit it did not ask for
// is the node's own.
func (p *Proc) Killed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// Kill ends the process with SIGKILL, as a power cut would, and waits
// until it has ended.
func (p *Proc) Kill() {
	_ = p.Signal(os.Kill)
	<-p.done
}

// Stop asks the process to stop (SIGTERM), waits for it, and kills it if
// it takes longer than grace. It returns how the process ended: nil for
// exit status 0.
func (p *Proc) Stop(grace time.Duration) error {
	if err := p.Signal(stopSignal); err != nil && !p.Exited() {
		return err
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	select {
	case <-p.done:
	case <-deadline.C:
		p.Kill()
		return fmt.Errorf("localcluster: %s did not stop within %v of %v, and was killed", p.spec.Name, grace, stopSignal)
	}
	return p.err
}

// AwaitReady returns once the node answers GET /status with its own
// address, and fails if the process exits first (with ErrPortTaken if it
// could not listen on its port), if ctx ends, or after within. The node
// is a separate process, so asking it again is the only way to learn
// that it serves; the address tells it from another process that holds
// the port.
func (p *Proc) AwaitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := p.spec.Client
	if client == nil {
		client = &http.Client{Timeout: time.Second}
	}
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	var last error
	for {
		if last = p.askStatus(ctx, client); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.exitedBeforeReady()
		case <-ctx.Done():
			if p.Exited() {
				return p.exitedBeforeReady()
			}
			return fmt.Errorf("localcluster: %s did not serve on %s within %v: %w", p.spec.Name, p.spec.Addr, within, last)
		case <-tick.C:
		}
	}
}

// askStatus asks the node's /status once, and returns nil if it answers
// 200 with the node's own address, from this process (a status without a
// pid, as a fake node's, is taken on its address).
func (p *Proc) askStatus(ctx context.Context, client *http.Client) error {
	scheme := p.spec.Scheme
	if scheme == "" {
		scheme = "http"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+p.spec.Addr+"/status", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/status answered %s", resp.Status)
	}
	var st struct {
		Address string `json:"address"`
		PID     int    `json:"pid"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return fmt.Errorf("/status: %w", err)
	}
	self := p.spec.Self
	if self == "" {
		self = p.spec.Addr
	}
	if st.Address != self {
		return fmt.Errorf("/status is %s's, not %s's", st.Address, self)
	}
	if st.PID != 0 && st.PID != p.Pid() {
		// Another process serves the address: one another test
		// started on the same port a moment before, while this one
		// finds its port taken and exits (ErrPortTaken).
		return fmt.Errorf("/status is process %d's, not %d's", st.PID, p.Pid())
	}
	return nil
}

// exitedBeforeReady is AwaitReady's error for a process that ended.
func (p *Proc) exitedBeforeReady() error {
	err := fmt.Errorf("localcluster: %s exited before it served on %s: %s", p.spec.Name, p.spec.Addr, exitText(p.err))
	if strings.Contains(p.log.String(), "address already in use") {
		return fmt.Errorf("%w: %w", ErrPortTaken, err)
	}
	return err
}

// AwaitLog returns once the process's output holds marker, and fails if
// the process exits first or after within.
func (p *Proc) AwaitLog(marker string, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		found, changed := p.log.contains(marker)
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-p.done:
			if found, _ := p.log.contains(marker); found {
				return nil
			}
			return fmt.Errorf("localcluster: %s exited (%s) before its output held %q", p.spec.Name, exitText(p.err), marker)
		case <-deadline.C:
			return fmt.Errorf("localcluster: %s's output lacks %q after %v", p.spec.Name, marker, within)
		}
	}
}

// exitText says how a process ended.
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
