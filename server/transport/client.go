package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/node"
)

var _ node.Network = (*Client)(nil)

// Client limits. Replication fans out to every replica and callbacks go to
// few client hosts at high rates, so idle connections per host are many.
// Connections per host are bounded: a burst of pops due together used to
// open a connection for each (70% of a node's CPU went to dialing, and
// 30,000 pops into one endpoint took minutes); bounded, the requests wait
// for a connection and reuse it (30,000 in under a second on loopback).
// The wait for a worker and a connection counts against clientMaxQueueWait,
// not against the request's timeout (see pipeline.go).
const (
	clientMaxIdleConns        = 4096
	clientMaxIdleConnsPerHost = 512
	clientMaxConnsPerHost     = 128
	clientIdleConnTimeout     = 90 * time.Second
	clientDialTimeout         = 2 * time.Second
)

// Client is the node's network in production. Each Send waits in the queue
// of its destination host for one of that host's workers, which performs
// the HTTP round trip; the outcomes are handed to the node through enter
// in batches, by one goroutine.
type Client struct {
	// enter runs f inside the node: the server's Serial.Do, or a test's
	// stand-in.
	enter func(f func()) bool
	rt    http.RoundTripper
	// peerRT carries the requests between nodes (see outbound.go), over
	// https when peerHTTPS; rt, unless the server gives its own.
	peerRT    http.RoundTripper
	peerHTTPS bool
	// unbatched sends every request between nodes alone, through peerRT
	// (UseUnencryptedHTTP2).
	unbatched bool
	// linkDial dials the connections the workers of peers' batched queues
	// hold themselves (peerconn.go); nil sends those through peerRT.
	linkDial *linkDialer
	log      *slog.Logger
	// dialer resolves through the static DNS records; nil when a test
	// gives its own transport.
	dialer *dnsDialer
	limits limits
	count  counters
	// directDial dials the workers' own connections, over which
	// callbacks to plain http:// URLs go (direct.go); nil: every request
	// goes through rt.
	directDial func(ctx context.Context, network, addr string) (net.Conn, error)
	metrics    *metrics
	// base is cancelled by Close, so round trips still running at shutdown
	// end at once instead of at their timeout.
	base   context.Context
	cancel context.CancelCauseFunc

	// mu guards hosts and closed; Send takes it under the node lock, so
	// nothing slow happens under it.
	mu      sync.Mutex
	hosts   map[hostID]*host
	closed  bool
	conns   map[*peerConn]struct{} // the workers' own, open
	workers sync.WaitGroup

	deadlines sync.Pool // of *deadline, for round trips
	jobs      sync.Pool // of *job: a worker pools the jobs it has served
	results   *completions
	stop      chan struct{} // closed by Close once every worker ended
	delivered chan struct{} // closed when the delivering goroutine ended
}

// NewClient returns a Client whose completions enter the node through
// enter, which runs f under the node lock and reports whether it ran (the
// server's Serial.Do): it records a panic in f, re-raises it, and refuses
// every later f. Its metrics are registered on reg. Its connections
// consult no static DNS records until SetDNS.
func NewClient(enter func(f func()) bool, reg prometheus.Registerer, log *slog.Logger) *Client {
	d := newDNSDialer()
	c := newClient(enter, log, defaultLimits(), newTransport(d.DialContext))
	c.dialer = d
	c.directDial = d.DialContext
	reg.MustRegister(c.metrics.collectors()...)
	return c
}

func newClient(enter func(func()) bool, log *slog.Logger, lim limits, rt http.RoundTripper) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancelCause(context.Background())
	c := &Client{
		enter: enter,
		// Requests go to the transport as they are: a callback or peer
		// that redirects is answering something else, and the node sees
		// the 3xx and judges it.
		rt:        rt,
		peerRT:    rt,
		log:       log,
		limits:    lim,
		base:      base,
		cancel:    cancel,
		hosts:     make(map[hostID]*host),
		conns:     make(map[*peerConn]struct{}),
		results:   newCompletions(),
		stop:      make(chan struct{}),
		delivered: make(chan struct{}),
	}
	c.deadlines.New = func() any { return newDeadline(&c.deadlines) }
	c.jobs.New = func() any { return new(job) }
	c.metrics = newMetrics(c)
	go c.deliver()
	return c
}

func newTransport(dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		// Peers and callbacks are addressed directly; no environment proxy.
		Proxy:               nil,
		DialContext:         dial,
		MaxIdleConns:        clientMaxIdleConns,
		MaxIdleConnsPerHost: clientMaxIdleConnsPerHost,
		MaxConnsPerHost:     clientMaxConnsPerHost,
		IdleConnTimeout:     clientIdleConnTimeout,
		DisableCompression:  true,
	}
}

// Send queues req for its destination host and returns at once. done is
// called under the node lock with the outcome within req.MaxWait (or
// clientMaxQueueWait, when it is unset or longer) plus timeout: the wait
// for a worker and a connection is bounded by the first, and timeout
// counts from when the request has its connection and is written. A full
// queue, or a request that waited too long, fails with ErrShed. After Close, done is never called: the node is stopped.
//
// A request between nodes that writes waits in its peer's batched queue
// (see clientBatchWorkersPerHost) and may travel in a batch; it still
// gets its own done, with its own response or error.
func (c *Client) Send(req node.Request, timeout time.Duration, done func(node.Response, error)) {
	key, kind := hostKey(req.URL), kindOf(req)
	j := c.jobs.Get().(*job)
	*j = job{req: req, kind: kind, timeout: timeout, done: done}
	if !c.unbatched {
		j.target = batchTarget(req, kind)
	}
	id := hostID{key: key, batch: j.target != ""}
	if id.batch {
		j.size = batchEntrySize(node.Request{Method: req.Method, URL: j.target, Header: req.Header, Body: req.Body})
	}
	j.queued = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.record(kind, outcomeFailed, noConn)
		return
	}
	h := c.hosts[id]
	if h == nil {
		h = &host{key: key, batch: id.batch, wake: make(chan struct{}, c.workerLimit(id.batch))}
		c.hosts[id] = h
	}
	if h.waiting() >= c.limits.queue || c.count.depth.Load() >= int64(c.limits.queued) {
		c.shedLocked(h, kind, j.queued)
		why := fmt.Sprintf("queue full (%d waiting, %d for all hosts)", h.waiting(), c.count.depth.Load())
		c.results.push(completion{done: done, err: shedError(key, why)})
		return
	}
	h.push(j)
	c.count.depth.Add(1)
	if h.waiting() > h.idle && h.workers < c.workerLimit(h.batch) {
		h.workers++
		c.workers.Add(1)
		go c.work(h)
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// workerLimit is the most workers a host's queue may have.
func (c *Client) workerLimit(batch bool) int {
	if batch {
		return c.limits.batchWorkers
	}
	return c.limits.workers
}

// Stats returns the counts of the Client's requests so far.
func (c *Client) Stats() ClientStats { return c.count.stats() }

// Close fails the requests still queued and aborts the round trips still
// running, waits for the workers to end and their outcomes to be delivered
// through enter (dropped there if the node is stopped), and drops idle
// connections. It must not be called under the node lock.
func (c *Client) Close() {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	if !already {
		c.cancel(ErrClientClosed)
		c.mu.Lock()
		for pc := range c.conns {
			pc.conn.Close() // its worker reads ErrClientClosed
		}
		c.mu.Unlock()
		c.workers.Wait()
		close(c.stop)
	}
	<-c.delivered
	for _, rt := range []http.RoundTripper{c.rt, c.peerRT} {
		if t, ok := rt.(interface{ CloseIdleConnections() }); ok {
			t.CloseIdleConnections()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		c.logShed(h, time.Now())
	}
}
