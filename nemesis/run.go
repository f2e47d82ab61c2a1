package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// ErrUnsupported is wrapped by Run's error where network namespaces or
// TAP devices cannot be made (not root, no /dev/net/tun, not Linux): the
// caller says so and skips, never silently.
var ErrUnsupported = errors.New("nemesis: this machine cannot run the nemesis")

// Config is one run of the nemesis.
type Config struct {
	// Seed fixes the schedule of faults, the workload's choices and the
	// switch's draws (the processes' own timing is the machine's).
	Seed uint64
	// Nodes is the cluster's size.
	Nodes int
	// Rounds is how many rounds of faults; Kinds the faults they draw
	// from (AllFaults when empty).
	Rounds int
	Kinds  []FaultKind
	// Lead is the healthy stretch before the first round, Settle the
	// healthy stretch after each heal, and Tail the liveness phase after
	// the last round: the workload stops and the run watches the last
	// timers pop, and any that come back.
	Lead, Settle, Tail time.Duration
	Workload           Workload
	// Chronos is the node binary; Dir the run's folder (the nodes'
	// files and logs, history.json, report.txt), which is kept.
	Chronos, Dir string
	// Prefix names the namespaces; stale ones under it are removed at
	// the start.
	Prefix string
	// NetSlack is the lateness a healthy exchange may show on this
	// machine (processes and the switch share its cores): the checker's
	// MaxNetDelay.
	NetSlack time.Duration
	// Bounds are the real-run bounds of R1-R3.
	Bounds checker.RealBounds
	// Out receives the progress and the report.
	Out io.Writer
}

// DefaultConfig is the CI run: five nodes, one round of each fault
// kind, about five minutes.
func DefaultConfig() Config {
	return Config{Seed: 1, Nodes: 5, Rounds: len(AllFaults), Lead: 10 * time.Second, Settle: 20 * time.Second,
		Tail: 45 * time.Second, Workload: DefaultWorkload(), Prefix: "chrnem-", NetSlack: 250 * time.Millisecond,
		Bounds: checker.DefaultRealBounds(), Out: io.Discard}
}

// Validate names the first field out of range.
func (c Config) Validate() error {
	switch {
	case c.Nodes < 2 || c.Nodes > 16:
		return fmt.Errorf("nemesis: Nodes %d is not 2 to 16", c.Nodes)
	case c.Rounds < 0:
		return fmt.Errorf("nemesis: Rounds %d is negative", c.Rounds)
	case c.Lead < 0 || c.Settle < 0 || c.Tail < 0 || c.NetSlack < 0:
		return fmt.Errorf("nemesis: Lead %v, Settle %v, Tail %v, NetSlack %v: none may be negative", c.Lead, c.Settle, c.Tail, c.NetSlack)
	case c.Workload.Workers < 1 || c.Workload.Think <= 0:
		return fmt.Errorf("nemesis: Workload %d workers, think %v: want at least one worker and a positive think time", c.Workload.Workers, c.Workload.Think)
	case c.Chronos == "" || c.Dir == "":
		return errors.New("nemesis: Chronos (the node binary) and Dir (the run's folder) are required")
	case c.Prefix == "" || strings.ContainsAny(c.Prefix, "/ "):
		return fmt.Errorf("nemesis: Prefix %q is empty or not a file name", c.Prefix)
	}
	for _, k := range c.Kinds {
		if !slices.Contains(AllFaults, k) {
			return fmt.Errorf("nemesis: fault kind %q is not one of %v", k, AllFaults)
		}
	}
	return c.Bounds.Validate()
}

// Result is a finished run: its record and the checker's verdict.
type Result struct {
	Record  Record
	Verdict checker.RealVerdict
	// Exits are node processes that ended without the nemesis killing
	// them: each is a finding.
	Exits []string
	Dir   string
}

// Failed reports whether the run found a violation or a node that
// exited by itself.
func (r *Result) Failed() bool { return len(r.Verdict.Violations) > 0 || len(r.Exits) > 0 }

// Run makes the namespaces and the switch, starts the nodes, runs the
// workload through the schedule of faults, judges the history and writes
// the report to c.Out and c.Dir. It tears everything down before it
// returns, on an error or a cancelled ctx too.
func Run(ctx context.Context, c Config) (res *Result, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(c.Kinds) == 0 {
		c.Kinds = AllFaults
	}
	if err := Supported(); err != nil {
		return nil, errors.Join(ErrUnsupported, err)
	}
	if removed, err := removeStale(c.Prefix); err != nil {
		return nil, err
	} else if len(removed) > 0 {
		fmt.Fprintf(c.Out, "removed stale namespaces of an earlier run: %v\n", removed)
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	e, err := setUp(c)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, e.tearDown()) }()
	if err := e.start(ctx); err != nil {
		return nil, err
	}
	if err := e.play(ctx); err != nil {
		return nil, err
	}
	return e.judge()
}

// env is one run's namespaces, switch, nodes and clients.
type env struct {
	c     Config
	top   topology
	nss   []*namespace
	sw    *Switch
	rec   *recorder
	hc    *http.Client
	nodes []*nodeProc
	sink  *http.Server
	wg    sync.WaitGroup
}

// setUp makes the namespaces, one per node and one for the clients, and
// the switch between them.
func setUp(c Config) (*env, error) {
	e := &env{c: c, top: topology{nodes: c.Nodes}}
	e.rec = newRecorder(e.top.members())
	ports := make([]io.ReadWriter, e.top.ports())
	for p := range e.top.ports() {
		name := fmt.Sprintf("%s%d-n%d", c.Prefix, os.Getpid(), p+1)
		if p == e.top.clients() {
			name = fmt.Sprintf("%s%d-clients", c.Prefix, os.Getpid())
		}
		ns, err := newNamespace(name, "nem0", e.top.mac(p), fmt.Sprintf("%s/%d", e.top.ip(p), prefixLen), e.top.neighbours(p))
		if err != nil {
			return nil, errors.Join(err, e.tearDown())
		}
		e.nss = append(e.nss, ns)
		ports[p] = ns.port()
	}
	sw, err := NewSwitch(ports, e.top.macs(), c.Seed)
	if err != nil {
		return nil, errors.Join(err, e.tearDown())
	}
	e.sw = sw
	sw.Run()
	clients := e.nss[e.top.clients()]
	e.hc = &http.Client{Transport: recordingTransport{rec: e.rec, next: &http.Transport{
		DialContext: clients.dial, MaxIdleConnsPerHost: 32, IdleConnTimeout: 30 * time.Second}}}
	return e, nil
}

// start starts the sink and the nodes and waits until every node
// answers.
func (e *env) start(ctx context.Context) error {
	clients := e.nss[e.top.clients()]
	ln, err := clients.listen(e.top.sinkHost())
	if err != nil {
		return fmt.Errorf("nemesis: callback sink: %w", err)
	}
	nodeOf := map[string]string{}
	for i := range e.c.Nodes {
		nodeOf[e.top.ip(i)] = e.top.addr(i)
	}
	e.sink = &http.Server{Handler: &sink{rec: e.rec, nodeOf: nodeOf}, ReadHeaderTimeout: 10 * time.Second}
	go e.sink.Serve(ln)
	names := make([]string, e.c.Nodes)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	e.nodes, err = writeConfig(e.c.Dir, e.c.Chronos, names, e.top.members(), e.top.ip(e.top.clients()))
	if err != nil {
		return err
	}
	for i, p := range e.nodes {
		p.ns, p.hc = e.nss[i], e.hc
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range e.nodes {
		if err := p.waitReady(ctx, 30*time.Second); err != nil {
			return fmt.Errorf("%w (its log: %s)", err, filepath.Join(p.dir, "chronos.log"))
		}
	}
	fmt.Fprintf(e.c.Out, "nemesis: %d nodes up in %s, run folder %s\n", e.c.Nodes, e.c.Prefix+"*", e.c.Dir)
	return nil
}

// play runs the workload through the lead-in, the rounds and the tail.
func (e *env) play(ctx context.Context) error {
	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	for i := range e.c.Workload.Workers {
		w := &worker{n: i + 1, rng: newRand(e.c.Seed, uint64(i+1)), hc: e.hc, rec: e.rec, nodes: e.top.members(),
			sink: "http://" + e.top.sinkHost() + "/cb", prefix: fmt.Sprintf("s%d", e.c.Seed)}
		e.wg.Go(func() { w.run(work, e.c.Workload.Think) })
	}
	rounds := Schedule(e.c.Seed, e.c.Rounds, e.c.Nodes, e.c.Kinds, e.c.Settle)
	e.rec.round(RoundTimes{Round: Round{Kind: "none"}, From: 0, To: e.c.Lead})
	if err := sleep(ctx, e.c.Lead); err != nil {
		return err
	}
	for _, r := range rounds {
		if err := e.round(ctx, r); err != nil {
			return err
		}
	}
	tail := e.rec.now()
	fmt.Fprintf(e.c.Out, "nemesis: rounds done at %v; workload stops, watching %v more\n", tail.Round(time.Second), e.c.Tail)
	stopWork()
	e.wg.Wait()
	if err := sleep(ctx, e.c.Tail); err != nil {
		return err
	}
	e.rec.finish(tail, e.c.NetSlack)
	e.rec.round(RoundTimes{Round: Round{Kind: "tail"}, From: tail, To: e.rec.now()})
	return nil
}

// round injects one round's fault, heals it and lets the cluster settle.
func (e *env) round(ctx context.Context, r Round) error {
	t := RoundTimes{Round: r, From: e.rec.now()}
	fmt.Fprintf(e.c.Out, "nemesis: %v at %v\n", r, t.From.Round(time.Second))
	t.Fault = e.rec.now()
	heal, err := e.inject(r)
	if errors.Is(err, errGone) {
		// A node that exited by itself is a finding (Result.Exits); the
		// round goes on without its fault, and the node comes back.
		fmt.Fprintf(e.c.Out, "nemesis: %v; it restarts at the heal\n", err)
		p := e.nodes[r.Nodes[0]]
		e.rec.fault(checker.Fault{Kind: checker.Crash, Nodes: []string{p.addr}, Detail: "exited by itself"})
		heal = func() error {
			e.rec.fault(checker.Fault{Kind: checker.Restart, Nodes: []string{p.addr}})
			return p.start()
		}
	} else if err != nil {
		return err
	}
	waitErr := sleep(ctx, r.For)
	t.Heal = e.rec.now()
	if err := errors.Join(heal(), waitErr); err != nil {
		return err
	}
	if err := sleep(ctx, r.Settle); err != nil {
		return err
	}
	t.To = e.rec.now()
	e.rec.round(t)
	return nil
}

// inject starts round r's fault and returns what heals it.
func (e *env) inject(r Round) (func() error, error) {
	if c := e.top.cutFor(r); c != nil {
		for l, rule := range c.rules {
			if err := e.sw.Set(l.from, l.to, rule); err != nil {
				return nil, err
			}
		}
		for _, f := range c.faults {
			e.rec.fault(f)
		}
		return func() error {
			e.sw.Clear()
			for _, f := range c.faults {
				e.rec.fault(checker.Fault{Kind: checker.Heal, Nodes: f.Nodes, Peers: f.Peers})
			}
			return nil
		}, nil
	}
	p := e.nodes[r.Nodes[0]]
	who := []string{p.addr}
	switch r.Kind {
	case Kill:
		if err := p.kill(); err != nil {
			return nil, err
		}
		e.rec.fault(checker.Fault{Kind: checker.Crash, Nodes: who, Detail: "kill -9"})
		return func() error {
			e.rec.fault(checker.Fault{Kind: checker.Restart, Nodes: who})
			return p.start()
		}, nil
	case Pause:
		if err := p.signal(syscall.SIGSTOP); err != nil {
			return nil, err
		}
		e.rec.fault(checker.Fault{Kind: checker.Pause, Nodes: who, Detail: "SIGSTOP"})
		return func() error {
			e.rec.fault(checker.Fault{Kind: checker.Resume, Nodes: who, Detail: "SIGCONT"})
			return p.signal(syscall.SIGCONT)
		}, nil
	}
	return nil, fmt.Errorf("nemesis: round %d: no fault of kind %q", r.N, r.Kind)
}

// judge stops the nodes and judges the history.
func (e *env) judge() (*Result, error) {
	res := &Result{Record: e.rec.record(e.c.Seed, e.c.Bounds), Dir: e.c.Dir}
	for _, p := range e.nodes {
		p.stop(5 * time.Second)
		res.Exits = append(res.Exits, p.unexpected()...)
	}
	if err := res.Record.Save(filepath.Join(e.c.Dir, "history.json")); err != nil {
		return nil, err
	}
	res.Verdict = checker.DefaultOptions().JudgeReal(&res.Record.History, e.c.Bounds)
	f, err := os.Create(filepath.Join(e.c.Dir, "report.txt"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := res.Report(io.MultiWriter(e.c.Out, f)); err != nil {
		return nil, err
	}
	return res, nil
}

// tearDown stops every node, the sink and the switch, and removes the
// namespaces. It may be called on a half-made env.
func (e *env) tearDown() error {
	for _, p := range e.nodes {
		p.stop(5 * time.Second)
	}
	var errs []error
	if e.sink != nil {
		errs = append(errs, e.sink.Close())
	}
	if e.hc != nil {
		e.hc.CloseIdleConnections()
	}
	for _, ns := range e.nss {
		errs = append(errs, ns.close())
	}
	if e.sw != nil {
		e.sw.Wait()
	}
	e.nss, e.nodes, e.sink, e.sw = nil, nil, nil, nil
	return errors.Join(errs...)
}

// newRand is the seeded source of one part of the run (stream).
func newRand(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
