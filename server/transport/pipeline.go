package transport

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// Pipeline limits. Every outbound request waits in the queue of its
// destination host (scheme, host and port) for one of that host's workers;
// a worker performs one round trip at a time. Completions are handed to
// the node in batches, so a burst of pops takes the node lock once per
// batch instead of once per pop.
const (
	// clientWorkersPerHost bounds the round trips running at once to one
	// host. It matches the connections per host, so a worker never waits
	// for another worker's connection.
	clientWorkersPerHost = clientMaxConnsPerHost
	// clientMaxQueuePerHost bounds the requests waiting for a worker of
	// one host; a send beyond it is shed at once (ErrShed). A queued
	// request holds well under 1 KB, so the bound is tens of MB a host.
	// It is sized for a burst one node pops in a few seconds (about
	// 16,000 pops a second on the 2-core development machine): 16,384
	// shed 17,689 pops of 60,000 due within two seconds into one
	// endpoint, lost with replication factor 1.
	clientMaxQueuePerHost = 65536
	// clientMaxQueued bounds the requests waiting for a worker over all
	// hosts, callbacks to many hosts included; a send beyond it is shed
	// at once (ErrShed).
	clientMaxQueued = 131072
	// clientMaxQueueWait bounds the wait of a request for a worker and for
	// a connection; a request that waited longer is shed (ErrShed). A
	// request's own node.Request.MaxWait may be shorter: the node sets it
	// to the 2 s by which the next replica pops after this one, so that a
	// pop held back longer is left to that replica rather than made
	// twice, and leaves it unset for the last replica's pop, which has
	// nobody to leave it to and so waits up to this bound.
	clientMaxQueueWait = time.Minute
	// clientMaxBatch bounds the completions handed to the node under one
	// lock, so inbound requests and alarms are not held back behind a
	// long burst.
	clientMaxBatch = 256
	// clientWorkerIdle is how long a worker waits for a request before it
	// ends; a host with no worker left is forgotten.
	clientWorkerIdle = 30 * time.Second
	// clientShedLogInterval is the least time between two log lines about
	// requests shed for one host.
	clientShedLogInterval = 10 * time.Second
	// clientBatchWorkersPerHost bounds the batches running at once to one
	// peer. Requests between nodes that write (replication, pop notices,
	// tombstones, references) wait in a queue of their own per peer, and
	// a worker that frees up sends everything waiting, up to
	// batchMaxRequests and batchMaxBytes, in one request to BatchPath: an
	// idle peer gets each request at once, alone, and a busy one gets
	// one HTTP exchange for many. Few workers make the batches large;
	// 2 × batchMaxRequests in flight is as many as the 128 lone requests
	// before. The second goes only when a whole batch waits (Client.next).
	// Measured in docs/design.md section 5.
	clientBatchWorkersPerHost = 2
)

// ErrShed is the error, wrapped with the host, of a send refused because
// its host's queue was full or because it waited too long for a worker or a
// connection. The node takes it as a failed request: the next replica pops
// the timer.
var ErrShed = errors.New("shed under load")

// ErrClientClosed is the error of a send still queued or running when the
// Client was closed.
var ErrClientClosed = errors.New("client closed")

// limits are a Client's pipeline limits; the defaults are the constants
// above, and tests shrink them.
type limits struct {
	workers, queue, queued    int
	batch                     int
	queueWait, idle, logEvery time.Duration
	// The batches of requests between nodes: workers per peer, and the
	// sub-requests and bytes of one batch.
	batchWorkers, batchRequests, batchBytes int
}

func defaultLimits() limits {
	return limits{
		workers:   clientWorkersPerHost,
		queue:     clientMaxQueuePerHost,
		queued:    clientMaxQueued,
		batch:     clientMaxBatch,
		queueWait: clientMaxQueueWait,
		idle:      clientWorkerIdle,
		logEvery:  clientShedLogInterval,

		batchWorkers:  clientBatchWorkersPerHost,
		batchRequests: batchMaxRequests,
		batchBytes:    batchMaxBytes,
	}
}

// ClientStats counts a Client's outbound requests since it was built.
type ClientStats struct {
	// OK counts round trips answered with a response, whatever its status.
	OK uint64
	// Failed counts round trips that ended in an error, and sends after
	// Close.
	Failed uint64
	// Shed counts sends refused with ErrShed.
	Shed uint64
	// QueueDepth is the number of requests waiting for a worker now.
	QueueDepth int64
	// InFlight is the number of round trips running now.
	InFlight int64
	// Batches counts the entries into the node that delivered completions,
	// and Completions the completions they delivered.
	Batches, Completions uint64
	// PeerBatches counts the requests to a peer's BatchPath, and
	// PeerBatched the requests between nodes they carried (each also
	// counted in OK, Failed or Shed).
	PeerBatches, PeerBatched uint64
}

// counters are the atomic counts behind ClientStats.
type counters struct {
	ok, failed, shed, batches, completions atomic.Uint64
	peerBatches, peerBatched               atomic.Uint64
	depth, inFlight                        atomic.Int64
}

func (c *counters) stats() ClientStats {
	return ClientStats{
		OK: c.ok.Load(), Failed: c.failed.Load(), Shed: c.shed.Load(),
		QueueDepth: c.depth.Load(), InFlight: c.inFlight.Load(),
		Batches: c.batches.Load(), Completions: c.completions.Load(),
		PeerBatches: c.peerBatches.Load(), PeerBatched: c.peerBatched.Load(),
	}
}

// job is one queued send.
type job struct {
	req     node.Request
	kind    int
	timeout time.Duration
	done    func(node.Response, error)
	queued  time.Time
	// target is the request target of a request that may go in a batch
	// (see batchTarget), and size an upper bound of its entry's bytes.
	target string
	size   int
}

// hostID names a queue: a destination, and whether its queue is the
// batched one of requests between nodes.
type hostID struct {
	key   string
	batch bool
}

// host is the queue and workers of one destination. All fields but wake
// are guarded by Client.mu.
type host struct {
	key   string
	batch bool
	// jobs is the queue, oldest first. Taking re-slices it, so appending
	// reallocates only the requests still waiting, and a queue that never
	// drains does not grow past about twice its length; taking the last
	// keeps the array from its start, so that a queue that holds one
	// request at a time, as an idle peer's does, allocates nothing.
	jobs    []*job
	workers int
	idle    int
	// busy counts the workers of a batched queue in a round trip. While
	// one is, the others leave the queue to it unless a whole batch
	// waits (see Client.next).
	busy int
	// wake holds one token per job a worker may not have seen yet.
	wake chan struct{}
	// shedSince counts the sends shed since the last log line, at lastLog.
	shedSince int
	lastLog   time.Time
}

func (h *host) waiting() int { return len(h.jobs) }

func (h *host) id() hostID { return hostID{h.key, h.batch} }

// peek returns the oldest request of the queue, or nil.
func (h *host) peek() *job {
	if len(h.jobs) == 0 {
		return nil
	}
	return h.jobs[0]
}

func (h *host) push(j *job) { h.jobs = append(h.jobs, j) }

func (h *host) pop() *job {
	if len(h.jobs) == 0 {
		return nil
	}
	j := h.jobs[0]
	h.jobs[0] = nil
	if len(h.jobs) == 1 {
		h.jobs = h.jobs[:0]
	} else {
		h.jobs = h.jobs[1:]
	}
	return j
}

// hostKey names the destination of rawURL as the transport's connection
// pool does: scheme, host and port, the default port filled in. A URL it
// cannot read has its own key; the round trip then fails. A URL that
// already starts with its key (the usual callback, and every URL a node
// sends a peer) is not copied.
func hostKey(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return rawURL
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	prefix := len(scheme) + len("://") + len(rest)
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest, prefix = rest[i+1:], -1
	}
	if s, r := strings.ToLower(scheme), strings.ToLower(rest); s != scheme || r != rest {
		scheme, rest, prefix = s, r, -1
	}
	if i := strings.LastIndexByte(rest, ':'); i < 0 || i < strings.LastIndexByte(rest, ']') {
		port := "80"
		if scheme == "https" {
			port = "443"
		}
		rest += ":" + port
		prefix = -1
	}
	if prefix >= 0 {
		return rawURL[:prefix]
	}
	return scheme + "://" + rest
}

// completion is one outcome on its way into the node.
type completion struct {
	done func(node.Response, error)
	resp node.Response
	err  error
}

// completions is the queue of outcomes waiting for the node. It never
// blocks a producer: a send shed at once queues its failure from under the
// node lock. Its bound is that of the sends: one outcome each, and those
// not shed at once are at most clientMaxQueued waiting plus the workers'.
type completions struct {
	mu    sync.Mutex
	items []completion
	wake  chan struct{}
}

func newCompletions() *completions {
	return &completions{wake: make(chan struct{}, 1)}
}

func (q *completions) push(c ...completion) {
	q.mu.Lock()
	q.items = append(q.items, c...)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take moves up to limit outcomes, oldest first, into buf.
func (q *completions) take(buf []completion, limit int) []completion {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.items), limit)
	buf = append(buf[:0], q.items[:n]...)
	clear(q.items[:n])
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil
	}
	return buf
}

// shedError is the error of a send shed for h.
func shedError(key, why string) error {
	return fmt.Errorf("server: %s: %w: %s", key, ErrShed, why)
}

// shedLocked counts a shed send of h and logs at most one line per
// interval; c.mu is held.
func (c *Client) shedLocked(h *host, kind int, now time.Time) {
	c.record(kind, outcomeShed, noConn)
	h.shedSince++
	if now.Sub(h.lastLog) < c.limits.logEvery {
		return
	}
	c.logShed(h, now)
}

// logShed logs the sends shed for h since the last line; c.mu is held.
func (c *Client) logShed(h *host, now time.Time) {
	if h.shedSince == 0 {
		return
	}
	c.log.Warn("outbound requests shed: the destination does not keep up",
		"host", h.key, "shed", h.shedSince, "queue_limit", c.limits.queue, "queue_wait_limit", c.limits.queueWait)
	h.shedSince, h.lastLog = 0, now
}
