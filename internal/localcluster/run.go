package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Cluster is a running local cluster.
type Cluster struct {
	opts  Options
	dir   string
	key   string // the cluster file's, hex
	out   *lines
	sink  *sink
	files []nodeFiles

	mu    sync.Mutex
	nodes []*Proc
	// reported are the nodes whose exit Wait has printed.
	reported map[*Proc]bool
}

// Run starts the cluster, prints how to use it, and serves until ctx ends
// (the command's Ctrl-C or SIGTERM), then stops every node. Each value
// received from reload (the command's SIGHUP) has every node reload its
// configuration; reload may be nil.
func Run(ctx context.Context, o Options, reload <-chan os.Signal) error {
	c, err := Start(ctx, o)
	if err != nil {
		return err
	}
	c.printUsage()
	return c.Wait(ctx, reload)
}

// Start writes the configuration, starts the sink and the nodes, and
// returns once every node serves. With BasePort 0 it picks free loopback
// ports, and picks others if a node finds its port taken. On any failure
// it stops what it started and says where the logs are.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := o.checkFree(); err != nil {
		return nil, err
	}
	dir, err := o.directory()
	if err != nil {
		return nil, err
	}
	if o.BasePort != 0 {
		return start(ctx, o, dir, o.addrs())
	}
	var c *Cluster
	err = OnFreeAddrs(o.Nodes, func(addrs []string) error {
		c, err = start(ctx, o, dir, addrs)
		return err
	})
	return c, err
}

// start runs the cluster of o on addrs, its files in dir.
func start(ctx context.Context, o Options, dir string, addrs []string) (*Cluster, error) {
	files := o.files(dir, addrs, 0)
	key, err := o.writeFiles(files)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: o, dir: dir, key: key, out: newLines(o.Out), files: files, reported: map[*Proc]bool{}}
	if o.Sink != "" {
		if c.sink, err = startSink(o.Sink, c.out); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		p, err := c.launch(f)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.nodes = append(c.nodes, p)
	}
	for _, p := range c.nodes {
		if err := p.AwaitReady(ctx, readyTimeout); err != nil {
			c.Stop()
			return nil, fmt.Errorf("%w (configuration and logs in %s)", err, dir)
		}
	}
	return c, nil
}

// directory returns Options.Dir, made if need be, or a new temporary one.
func (o Options) directory() (string, error) {
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "chronos-cluster-")
		if err != nil {
			return "", fmt.Errorf("localcluster: %w", err)
		}
		return d, nil
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return "", fmt.Errorf("localcluster: %w", err)
	}
	return o.Dir, nil
}

// launch starts one node, its output forwarded with its name.
func (c *Cluster) launch(f nodeFiles) (*Proc, error) {
	return Launch(Spec{Name: f.name, Bin: c.opts.Bin, Args: f.args(c.opts.InMemory), Addr: f.addr,
		Output: c.out.writer(f.name), OwnGroup: true})
}

// Dir is the folder of the configuration files and the logs.
func (c *Cluster) Dir() string { return c.dir }

// Nodes returns the nodes' processes, in the order of the membership.
func (c *Cluster) Nodes() []*Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// Addrs lists the nodes' addresses, in the order of the membership.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.files))
	for i, f := range c.files {
		out[i] = f.addr
	}
	return out
}

// Restart starts node i again on its files, once its process has ended
// (Kill), and returns once it serves, within limit.
func (c *Cluster) Restart(ctx context.Context, i int, limit time.Duration) error {
	c.mu.Lock()
	old := c.nodes[i]
	c.mu.Unlock()
	if !old.Exited() {
		return fmt.Errorf("localcluster: restart %s: it still runs", old.Name())
	}
	p, err := Launch(old.Spec())
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.nodes[i] = p
	c.mu.Unlock()
	return p.AwaitReady(ctx, limit)
}

// Wait serves until ctx ends, then stops every node. A node that exits
// meanwhile (killed to try a failover, say) is reported and the others
// keep serving; when none is left, Wait returns an error. On each value
// from reload, every node still running reloads its configuration; if
// the output cannot say so, the terminal that sent the SIGHUP has closed,
// and Wait stops every node and returns the output's error.
func (c *Cluster) Wait(ctx context.Context, reload <-chan os.Signal) error {
	nodes := c.Nodes()
	exits := make(chan *Proc, len(nodes))
	for _, p := range nodes {
		go func() { <-p.Done(); exits <- p }()
	}
	live := len(nodes)
	for live > 0 {
		select {
		case <-ctx.Done():
			return c.Stop()
		case <-reload:
			if err := c.reload(live); err != nil {
				return errors.Join(err, c.Stop())
			}
		case p := <-exits:
			c.mu.Lock()
			c.reported[p] = true
			c.mu.Unlock()
			live--
			c.out.printf("%s (%s, pid %d) exited: %v; %d of %d nodes still serve. To start it again (in your terminal):\n    %s %s\n",
				p.Name(), p.Addr(), p.Pid(), exitText(p.Err()), live, len(nodes), c.opts.Bin, strings.Join(p.Spec().Args, " "))
		}
	}
	c.Stop()
	return errors.New("localcluster: every node has exited")
}

// reload says that the live nodes reload, then sends each SIGHUP, on which
// it re-reads its files: the membership, the log level (the cluster file
// is every node's). It sends nothing if the output fails.
func (c *Cluster) reload(live int) error {
	nodes := c.Nodes()
	if err := c.out.printf("reload: %d of %d nodes re-read %s and their own file (membership, log level)\n",
		live, len(nodes), filepath.Join(c.dir, ClusterFileName)); err != nil {
		return fmt.Errorf("localcluster: output lost on reload, stopping every node: %w", err)
	}
	for _, p := range nodes {
		if !p.Exited() && reloadSignal != nil {
			_ = p.Signal(reloadSignal)
		}
	}
	return nil
}

// Stop stops every node at once (SIGTERM, then SIGKILL after
// stopTimeout), and the sink. It returns an error if a node did not exit
// cleanly, unless Wait already reported its exit.
func (c *Cluster) Stop() error {
	nodes := c.Nodes()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, p := range nodes {
		wg.Go(func() { errs[i] = p.Stop(stopTimeout) })
	}
	wg.Wait()
	c.mu.Lock()
	for i, p := range nodes {
		if errs[i] != nil && !c.reported[p] {
			errs[i] = fmt.Errorf("localcluster: %s: %w", p.Name(), errs[i])
		} else {
			errs[i] = nil
		}
	}
	c.mu.Unlock()
	if c.sink != nil {
		c.sink.stop()
	}
	c.out.printf("stopped; configuration and logs kept in %s\n", c.dir)
	return errors.Join(errs...)
}

// ExampleTimer is the timer definition of the README's curl example, for
// a sink at sinkAddr: five pops, one every 2 s, of the opaque "hello".
func ExampleTimer(sinkAddr string) string {
	return fmt.Sprintf(`{"timing":{"interval":2,"repeat-for":10},"callback":{"http":{"uri":"http://%s/cb","opaque":"hello"}}}`, sinkAddr)
}

// printUsage says what runs where and how to use it.
func (c *Cluster) printUsage() {
	var b strings.Builder
	fmt.Fprintf(&b, "chronos cluster: %d nodes serve on loopback (this command is pid %d)\n", len(c.nodes), os.Getpid())
	for i, p := range c.nodes {
		fmt.Fprintf(&b, "  %-6s http://%s  pid %-7d files and log in %s\n", p.Name(), p.Addr(), p.Pid(), c.files[i].dir)
	}
	fmt.Fprintf(&b, "configuration: %s (every node's), and each node's own chronos.conf\n", c.files[0].cluster)
	sinkAddr := c.opts.Sink
	if sinkAddr == "" {
		sinkAddr = DefaultSink
		b.WriteString("no callback sink (-sink=): run an endpoint of your own for the pops\n")
	} else {
		fmt.Fprintf(&b, "callback sink: http://%s/ prints every pop it receives, below, as \"sink  | ...\"\n", sinkAddr)
	}
	first := "http://" + c.nodes[0].Addr()
	fmt.Fprintf(&b, "\nCreate a timer through any node; it pops 5 times, 2 s apart:\n"+
		"    curl -i -X POST %s/timers \\\n      -d '%s'\n", first, ExampleTimer(sinkAddr))
	fmt.Fprintf(&b, "Delete it:         curl -i -X DELETE %s/timers/<id from the Location header>\n", first)
	fmt.Fprintf(&b, "A node's state:    curl %s/status    (and /metrics)\n", first)
	b.WriteString("A failover:        kill -9 <a node's pid>; its timers pop from their other replica\n")
	if len(ReloadSignals) > 0 {
		b.WriteString("Reload every node: kill -HUP <this command's pid>, after editing the configuration\n")
	}
	b.WriteString("Stop every node:   Ctrl-C, or kill <this command's pid>\n\n")
	c.out.printf("%s", b.String())
}

// Join grows the cluster by n nodes, the first step of a scale up
// (docs/operations.md): it starts them with the cluster file naming the
// running nodes as steady and themselves as joining, waits until they
// serve, and then has the running nodes reload that file. Each node's
// resync then moves the timers the new ring places on the new nodes;
// GET /status says when it has completed. The last step, every node
// steady, is Settle. With BasePort 0 the new nodes take free loopback
// ports, and others if one finds its port taken; otherwise they follow
// the running ones.
func (c *Cluster) Join(ctx context.Context, n int) error {
	if n < 1 || len(c.files)+n > MaxNodes {
		return fmt.Errorf("localcluster: join %d nodes to %d: the cluster holds 1..%d", n, len(c.files), MaxNodes)
	}
	steady := c.Addrs()
	try := func(addrs []string) error {
		files := c.opts.files(c.dir, addrs, len(c.files))
		if err := writeClusterFile(files[0].cluster, steady, addrs, c.key); err != nil {
			return err
		}
		if err := c.opts.writeNodeFiles(files, len(c.files), slices.Concat(steady, addrs)); err != nil {
			return err
		}
		var started []*Proc
		for _, f := range files {
			p, err := c.launch(f)
			if err == nil {
				started = append(started, p)
				err = p.AwaitReady(ctx, readyTimeout)
			}
			if err != nil {
				for _, p := range started {
					_ = p.Stop(stopTimeout)
				}
				return fmt.Errorf("%w (configuration and logs in %s)", err, c.dir)
			}
		}
		c.mu.Lock()
		c.files = append(c.files, files...)
		c.nodes = append(c.nodes, started...)
		c.mu.Unlock()
		return nil
	}
	var err error
	if c.opts.BasePort != 0 {
		addrs := make([]string, n)
		for i := range addrs {
			addrs[i] = c.opts.addr(len(c.files) + i)
		}
		err = try(addrs)
	} else {
		err = OnFreeAddrs(n, try)
	}
	if err != nil {
		// The running nodes were not asked to reload: the file says
		// what they run again.
		return errors.Join(err, writeClusterFile(c.files[0].cluster, steady, nil, c.key))
	}
	return c.signalAll(steady)
}

// Settle ends a scale: it writes the cluster file with every node steady
// and has every node reload it.
func (c *Cluster) Settle() error {
	addrs := c.Addrs()
	if err := writeClusterFile(c.files[0].cluster, addrs, nil, c.key); err != nil {
		return err
	}
	return c.signalAll(addrs)
}

// signalAll has the running nodes among addrs reload their files.
func (c *Cluster) signalAll(addrs []string) error {
	if reloadSignal == nil {
		return errors.New("localcluster: this system has no signal to reload a node with")
	}
	var errs []error
	for _, p := range c.Nodes() {
		if slices.Contains(addrs, p.Addr()) && !p.Exited() {
			errs = append(errs, p.Signal(reloadSignal))
		}
	}
	return errors.Join(errs...)
}
