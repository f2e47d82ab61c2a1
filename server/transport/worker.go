package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// work serves h's queue, one round trip at a time, until it has waited
// limits.idle for a request, or the Client closed, with the queue empty.
func (c *Client) work(h *host) {
	defer c.workers.Done()
	var l *link // the worker's own connection to its peer (peerconn.go)
	if h.batch && c.linkDial != nil && strings.HasPrefix(h.key, "http://") {
		l = new(link)
		defer c.hangUp(l)
	}
	idle := time.NewTimer(c.limits.idle)
	defer idle.Stop()
	var dc directConn // this worker's own connection, for callbacks
	defer dc.close()
	var jobs []*job
	served := false // the last pass performed jobs
	for {
		if jobs = c.next(h, jobs[:0], served); len(jobs) > 0 {
			served = true
			if len(jobs) == 1 {
				c.results.push(c.serve(h, l, jobs[0], &dc))
			} else {
				c.serveBatch(h, l, jobs)
			}
			// Served, a job is referred to by nothing else: its
			// outcome holds its done function, not the job.
			for i, j := range jobs {
				*j = job{}
				c.jobs.Put(j)
				jobs[i] = nil
			}
			continue
		}
		served = false
		idle.Reset(c.limits.idle)
		leave := false
		select {
		case <-h.wake:
		case <-idle.C:
			leave = true
		case <-c.base.Done():
			leave = true
		}
		if c.rest(h, leave) {
			return
		}
	}
}

// next appends to buf the oldest request of h's queue and, if the queue
// is batched, the requests after it that fit in its batch; if there is
// none, it counts the worker as idle and returns buf as it was. served
// says the worker comes from a round trip.
//
// A worker of a batched queue takes nothing while another is in a round
// trip, unless a whole batch waits: the one in its round trip takes what
// waits when it is back, in one batch, where a second worker would have
// sent the first request to arrive alone and the rest behind it in a
// second exchange: an exchange costs both nodes far more than a request
// it carries (docs/design.md 5.3), and under load the second worker sent
// a quarter of the requests alone. A second worker still serves a peer
// that a whole batch waits for.
func (c *Client) next(h *host, buf []*job, served bool) []*job {
	c.mu.Lock()
	defer c.mu.Unlock()
	if served && h.batch {
		h.busy--
	}
	if h.batch && h.busy > 0 && h.waiting() < c.limits.batchRequests {
		h.idle++
		return buf
	}
	j := h.pop()
	if j == nil {
		h.idle++
		return buf
	}
	buf = append(buf, j)
	if h.batch {
		buf = c.fill(h, buf)
		h.busy++
	}
	c.count.depth.Add(-int64(len(buf)))
	return buf
}

// rest ends an idle worker's wait. It reports whether the worker leaves:
// it may only if asked to and nothing is queued, so a queued request always
// has a worker. The last worker of a host forgets the host.
func (c *Client) rest(h *host, leave bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.idle--
	if !leave || h.waiting() > 0 {
		return false
	}
	h.workers--
	if h.workers == 0 {
		c.logShed(h, time.Now())
		delete(c.hosts, h.id())
	}
	return true
}

// serve performs j, or sheds it if it waited too long, and returns its
// outcome for the node. l is the worker's own connection to a peer, or
// nil; dc its own connection for callbacks that go direct (direct.go).
func (c *Client) serve(h *host, l *link, j *job, dc *directConn) completion {
	if err := c.refuse(h, j); err != nil {
		return completion{done: j.done, err: err}
	}
	if c.callbackDirect(j) {
		return c.tripDirect(h, j, dc)
	}
	return c.trip(h, l, j)
}

// trip performs j alone and returns its outcome.
func (c *Client) trip(h *host, l *link, j *job) completion {
	c.count.inFlight.Add(1)
	var resp node.Response
	var took time.Duration
	var err error
	if l != nil {
		resp, took, err = c.directTrip(l, h.key, j.target, j.req, c.queueEnd(j), j.timeout, wire.MaxBodyBytes, nil)
	} else {
		resp, took, err = c.roundTrip(j.req, c.queueEnd(j), j.timeout, wire.MaxBodyBytes)
	}
	c.count.inFlight.Add(-1)
	return c.outcome(h, j, resp, took, err)
}

// refuse returns, counted, why j is not sent: the Client closed, or j
// waited too long for a worker; nil if it may go, its wait observed.
func (c *Client) refuse(h *host, j *job) error {
	switch waited, limit := time.Since(j.queued), c.maxWait(j); {
	case c.base.Err() != nil:
		c.record(j.kind, outcomeFailed, noConn)
		return fmt.Errorf("server: %s %s: %w", j.req.Method, j.req.URL, ErrClientClosed)
	case waited > limit:
		c.mu.Lock()
		c.shedLocked(h, j.kind, time.Now())
		c.mu.Unlock()
		return shedError(h.key, fmt.Sprintf("waited %v for a worker, more than %v", waited, limit))
	default:
		c.sending(j, waited)
	}
	return nil
}

// outcome counts the outcome of j's round trip and returns it for the node.
func (c *Client) outcome(h *host, j *job, resp node.Response, took time.Duration, err error) completion {
	switch {
	case err == nil:
		c.record(j.kind, outcomeOK, took)
	case errors.Is(err, ErrShed):
		c.mu.Lock()
		c.shedLocked(h, j.kind, time.Now())
		c.mu.Unlock()
	default:
		c.record(j.kind, outcomeFailed, took)
	}
	return completion{done: j.done, resp: resp, err: err}
}

// maxWait is how long j may wait to be written: its own MaxWait, within
// the Client's bound.
func (c *Client) maxWait(j *job) time.Duration {
	if j.req.MaxWait > 0 {
		return min(j.req.MaxWait, c.limits.queueWait)
	}
	return c.limits.queueWait
}

// queueEnd is when j's wait to be written ends.
func (c *Client) queueEnd(j *job) time.Time { return j.queued.Add(c.maxWait(j)) }

// roundTrip performs one request, outside the node lock, and returns how
// long it took from having its connection (noConn if it never had one).
// It is shed if it has no connection by queueEnd, and fails if it has no
// response within timeout of having one, or one with a body over limit.
func (c *Client) roundTrip(req node.Request, queueEnd time.Time, timeout time.Duration, limit int64) (node.Response, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(c.base)
	defer cancel(nil)
	d := c.deadlines.Get().(*deadline)
	d.start(cancel, queueEnd, timeout)
	defer d.stop()
	ctx = httptrace.WithClientTrace(ctx, &d.trace)
	resp, err := c.exchange(ctx, req, limit)
	return resp, d.took(), err
}

// exchange writes req and reads its response, of at most limit bytes,
// under ctx.
func (c *Client) exchange(ctx context.Context, req node.Request, limit int64) (node.Response, error) {
	rt, target := c.transport(req)
	hr, err := http.NewRequestWithContext(ctx, req.Method, target, bytes.NewReader(req.Body))
	if err != nil {
		return node.Response{}, fmt.Errorf("server: build %s %s: %w", req.Method, req.URL, err)
	}
	putHeader(hr.Header, req.Header, 0)
	// The transport itself: an http.Client would only copy the header
	// for redirects, which are never followed (the node judges a 3xx).
	hresp, err := rt.RoundTrip(hr)
	if err != nil {
		if cause := context.Cause(ctx); cause != ctx.Err() {
			return node.Response{}, fmt.Errorf("server: %s %s: %w", req.Method, req.URL, cause)
		}
		// Named as an http.Client names it: "Put \"http://...\": ...".
		return node.Response{}, fmt.Errorf("server: %w", &url.Error{Op: urlErrorOp(req.Method), URL: req.URL, Err: err})
	}
	defer hresp.Body.Close()
	if hresp.ContentLength > limit {
		return node.Response{}, fmt.Errorf("server: %s %s: response body larger than %d bytes", req.Method, req.URL, limit)
	}
	var rd io.Reader = hresp.Body
	length := hresp.ContentLength
	switch {
	case req.Method == http.MethodHead:
		length = 0 // the length of the body a GET would have had
	case length < 0:
		// Of unknown length: one byte over the limit tells an oversized
		// body from one exactly at it.
		rd = io.LimitReader(hresp.Body, limit+1)
	}
	body, err := readBody(rd, length)
	if err != nil {
		if cause := context.Cause(ctx); cause != ctx.Err() {
			err = cause
		}
		return node.Response{}, fmt.Errorf("server: %s %s: read response: %w", req.Method, req.URL, err)
	}
	if int64(len(body)) > limit {
		return node.Response{}, fmt.Errorf("server: %s %s: response body larger than %d bytes", req.Method, req.URL, limit)
	}
	return node.Response{Status: hresp.StatusCode, Header: nodeHeader(hresp.Header), Body: body}, nil
}

// urlErrorOp is the Op of the *url.Error an http.Client returns for
// method: "Put" for PUT.
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// deadline bounds one round trip: until the request has its connection, by
// the end of its queue wait (past it the request is shed); from then on,
// by its timeout, so the wait for a worker and a connection never counts
// against the timeout.
//
// A Client pools its deadlines with their timer and their trace hook,
// which would otherwise cost each round trip four allocations. One goes
// back to the pool only if its timer was stopped before it fired: one
// that fired, or is firing, may still read its fields, and is dropped.
type deadline struct {
	pool  *sync.Pool            // the Client's, it goes back to
	timer *time.Timer           // runs d.expire; made once
	trace httptrace.ClientTrace // GotConn is d.gotConn; made once

	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	written bool
	wroteAt time.Time
	timeout time.Duration
}

func newDeadline(pool *sync.Pool) *deadline {
	d := &deadline{pool: pool}
	d.trace.GotConn = d.gotConn
	d.timer = time.AfterFunc(time.Hour, d.expire)
	d.timer.Stop()
	return d
}

// start arms d for a round trip that cancel cancels.
func (d *deadline) start(cancel context.CancelCauseFunc, queueEnd time.Time, timeout time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cancel, d.written, d.wroteAt, d.timeout = cancel, false, time.Time{}, timeout
	d.timer.Reset(time.Until(queueEnd))
}

// expire cancels the round trip: shed if it never had its connection,
// failed if it had one and no response within its timeout.
func (d *deadline) expire() {
	d.mu.Lock()
	cancel, written, timeout := d.cancel, d.written, d.timeout
	d.mu.Unlock()
	if written {
		cancel(fmt.Errorf("no response within %v of the request's writing: %w", timeout, context.DeadlineExceeded))
		return
	}
	cancel(fmt.Errorf("%w: no connection within the queue wait limit", ErrShed))
}

// gotConn is the httptrace hook: the request has its connection and is
// being written, so its timeout starts.
func (d *deadline) gotConn(httptrace.GotConnInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.written && d.timer.Stop() {
		d.written, d.wroteAt = true, time.Now()
		d.timer.Reset(d.timeout)
	}
}

// took returns the time since the request had its connection, or noConn.
func (d *deadline) took() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.written {
		return noConn
	}
	return time.Since(d.wroteAt)
}

// stop ends the deadline, and pools it if its timer never fired.
func (d *deadline) stop() {
	if !d.timer.Stop() {
		return
	}
	d.mu.Lock()
	d.cancel = nil
	d.mu.Unlock()
	d.pool.Put(d)
}

// deliver hands the outcomes to the node, up to limits.batch of them under
// one entry, until Close has stopped every worker and all are delivered.
func (c *Client) deliver() {
	defer close(c.delivered)
	var batch []completion
	for {
		select {
		case <-c.results.wake:
		case <-c.stop:
			for c.flush(&batch) {
			}
			return
		}
		for c.flush(&batch) {
		}
	}
}

// flush hands one batch of outcomes to the node and reports whether there
// was any.
func (c *Client) flush(buf *[]completion) bool {
	b := c.results.take(*buf, c.limits.batch)
	*buf = b
	if len(b) == 0 {
		return false
	}
	c.count.batches.Add(1)
	c.count.completions.Add(uint64(len(b)))
	c.enterBatch(b)
	clear(b)
	return true
}

// enterBatch runs the done callbacks of b under one entry into the node.
// A panic in one is the node's: enter (the server's Serial) has recorded
// it and closed, so the rest of the batch and every later one are
// dropped, and the run loop stops the process. It is not re-raised here, where it
// would kill the process before that loop reports it.
func (c *Client) enterBatch(b []completion) {
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("node panicked handling a completion", "panic", v)
		}
	}()
	c.enter(func() {
		for i := range b {
			b[i].done(b[i].resp, b[i].err)
		}
	})
}
