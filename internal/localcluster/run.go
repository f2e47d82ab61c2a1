package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// pingEvery is how often a starting node's /ping is asked again.
const pingEvery = 50 * time.Millisecond

// Cluster is a running local cluster.
type Cluster struct {
	opts  Options
	dir   string
	out   *lines
	sink  *sink
	nodes []*proc
	// exits receives each node as its process ends.
	exits chan *proc
}

// proc is one node's process.
type proc struct {
	nodeFiles
	cmd    *exec.Cmd
	output *prefixed
	err    error         // how it ended, once done is closed
	done   chan struct{} // closed when the process has ended
	exited bool          // set once Wait has reported its exit
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
// returns once every node answers /ping. On any failure it stops what it
// started and says where the logs are.
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
	files := o.files(dir)
	if err := writeFiles(files); err != nil {
		return nil, err
	}
	c := &Cluster{opts: o, dir: dir, out: newLines(o.Out), exits: make(chan *proc, len(files))}
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
		if err := c.awaitReady(ctx, p); err != nil {
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
func (c *Cluster) launch(f nodeFiles) (*proc, error) {
	p := &proc{nodeFiles: f, output: c.out.writer(f.name), done: make(chan struct{})}
	p.cmd = exec.Command(c.opts.Bin, f.args()...)
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	p.cmd.SysProcAttr = ownGroup()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("localcluster: start %s: %w", f.name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.output.Flush()
		close(p.done)
		c.exits <- p
	}()
	return p, nil
}

// awaitReady returns once p answers GET /ping with 200, and fails if it
// exits first or takes longer than readyTimeout. The node is a separate
// process, so asking it again is the only way to learn it serves.
func (c *Cluster) awaitReady(ctx context.Context, p *proc) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(pingEvery)
	defer tick.Stop()
	for {
		if resp, err := client.Get("http://" + p.addr + "/ping"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("localcluster: %s exited before it served: %v", p.name, p.err)
		case <-deadline.C:
			return fmt.Errorf("localcluster: %s did not answer /ping on %s within %v", p.name, p.addr, readyTimeout)
		case <-ctx.Done():
			return fmt.Errorf("localcluster: stopped while %s started: %w", p.name, ctx.Err())
		case <-tick.C:
		}
	}
}

// Wait serves until ctx ends, then stops every node. A node that exits
// meanwhile (killed to try a failover, say) is reported and the others
// keep serving; when none is left, Wait returns an error. On each value
// from reload, every node still running reloads its configuration; if
// the output cannot say so, the terminal that sent the SIGHUP has closed,
// and Wait stops every node and returns the output's error.
func (c *Cluster) Wait(ctx context.Context, reload <-chan os.Signal) error {
	live := len(c.nodes)
	for live > 0 {
		select {
		case <-ctx.Done():
			return c.Stop()
		case <-reload:
			if err := c.reload(live); err != nil {
				return errors.Join(err, c.Stop())
			}
		case p := <-c.exits:
			p.exited = true
			live--
			c.out.printf("%s (%s, pid %d) exited: %v; %d of %d nodes still serve. To start it again (in your terminal):\n    %s %s\n",
				p.name, p.addr, p.cmd.Process.Pid, exitText(p.err), live, len(c.nodes), c.opts.Bin, strings.Join(p.args(), " "))
		}
	}
	c.Stop()
	return errors.New("localcluster: every node has exited")
}

// reload says that the live nodes reload, then sends each SIGHUP, on which
// it re-reads its files: the membership, the log level (the cluster file
// is every node's). It sends nothing if the output fails.
func (c *Cluster) reload(live int) error {
	if err := c.out.printf("reload: %d of %d nodes re-read %s and their own file (membership, log level)\n",
		live, len(c.nodes), filepath.Join(c.dir, ClusterFileName)); err != nil {
		return fmt.Errorf("localcluster: output lost on reload, stopping every node: %w", err)
	}
	for _, p := range c.nodes {
		if !p.exited && reloadSignal != nil {
			_ = p.cmd.Process.Signal(reloadSignal)
		}
	}
	return nil
}

// Stop sends each node SIGTERM, waits for it to exit (killing one that
// takes longer than stopTimeout), and stops the sink. It returns an error
// if a node did not exit cleanly.
func (c *Cluster) Stop() error {
	for _, p := range c.nodes {
		_ = p.cmd.Process.Signal(stopSignal)
	}
	var errs []error
	for _, p := range c.nodes {
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if p.err != nil && !p.exited {
			errs = append(errs, fmt.Errorf("localcluster: %s: %s", p.name, exitText(p.err)))
		}
	}
	if c.sink != nil {
		c.sink.stop()
	}
	c.out.printf("stopped; configuration and logs kept in %s\n", c.dir)
	return errors.Join(errs...)
}

// exitText says how a process ended.
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
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
	for _, p := range c.nodes {
		fmt.Fprintf(&b, "  %-6s http://%s  pid %-7d files and log in %s\n", p.name, p.addr, p.cmd.Process.Pid, p.dir)
	}
	fmt.Fprintf(&b, "configuration: %s (every node's), and each node's own chronos.conf\n", c.nodes[0].cluster)
	sinkAddr := c.opts.Sink
	if sinkAddr == "" {
		sinkAddr = DefaultSink
		b.WriteString("no callback sink (-sink=): run an endpoint of your own for the pops\n")
	} else {
		fmt.Fprintf(&b, "callback sink: http://%s/ prints every pop it receives, below, as \"sink  | ...\"\n", sinkAddr)
	}
	first := "http://" + c.nodes[0].addr
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
