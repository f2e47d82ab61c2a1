package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// answer is a node's successful answer.
type answer struct {
	node   string
	header http.Header
	body   []byte
}

// call sends one request, trying the nodes in turn from the one that
// answered last. It retries what may succeed elsewhere or later: no answer
// (a refused or broken connection, the attempt's timeout), 503, and 408 (a
// write that reached its node past its deadline, not applied), after a
// backoff of at least the node's Retry-After. Every request the client
// sends is idempotent (PUT, DELETE, GET), so a retry after a lost answer
// does no harm. Any other answer is final: 2xx is the result, and the rest
// (400 above all) is a *StatusError.
//
// nodes nil means the client's nodes, starting from the one that answered
// last.
func (c *Client) call(ctx context.Context, nodes []endpoint, method, path string, body []byte) (*answer, error) {
	sticky, start := nodes == nil, 0
	if sticky {
		nodes, start = c.nodes, int(c.first.Load())
	}
	var last error
	var retryAfter time.Duration
	for attempt := 0; attempt < c.cfg.Attempts; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, c.backoff(attempt, retryAfter)); err != nil {
				return nil, fmt.Errorf("client: %s %s: %w (last failure: %v)", method, path, err, last)
			}
		}
		i := (start + attempt) % len(nodes)
		a, err := c.attempt(ctx, nodes[i], method, path, body)
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("client: %s %s: %w (last failure: %v)", method, path, ctx.Err(), firstErr(err, last))
		}
		var st *StatusError
		if err == nil || errors.As(err, &st) && !retried(st.Status) {
			// The node answered: the next call starts there.
			if sticky {
				c.first.Store(int64(i))
			}
			return a, err
		}
		last, retryAfter = err, 0
		if st != nil {
			retryAfter = st.RetryAfter
		}
		c.log.Info("chronos request failed", "node", nodes[i].addr, "method", method, "path", path,
			"attempt", attempt+1, "of", c.cfg.Attempts, "err", err)
	}
	return nil, &AllFailedError{Attempts: c.cfg.Attempts, Last: last}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// retried reports whether an answer of status is worth an attempt on
// another node: 503, and 408, a write that reached its node after its
// deadline (a clock behind, or a slow link) and was not applied.
func retried(status int) bool {
	return status == http.StatusServiceUnavailable || status == http.StatusRequestTimeout
}

// attempt sends the request to one node. A transport failure comes back as
// the transport's error, a non-2xx answer as a *StatusError. A write
// carries the attempt's deadline (wire.HeaderDeadline).
func (c *Client) attempt(ctx context.Context, n endpoint, method, path string, body []byte) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s on %s: %w", method, path, n.addr, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if deadline, ok := ctx.Deadline(); ok && method != http.MethodGet {
		// A node that gets the write after the attempt gave up on it
		// refuses it, so it cannot take effect behind a retry's back.
		req.Header.Set(wire.HeaderDeadline, strconv.FormatInt(deadline.UnixMilli(), 10))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// The *url.Error would repeat the method and URL.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, fmt.Errorf("client: %s %s on %s: %w", method, path, n.addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s on %s: read the answer: %w", method, path, n.addr, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{Method: method, Path: path, Node: n.addr, Status: resp.StatusCode,
			Reason: reason(resp.Header, b), RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	if len(b) > MaxAnswerBytes {
		return nil, fmt.Errorf("client: %s %s on %s: answer larger than %d bytes", method, path, n.addr, MaxAnswerBytes)
	}
	return &answer{node: n.addr, header: resp.Header, body: b}, nil
}

// maxReasonBytes bounds a reason taken from an answer's body.
const maxReasonBytes = 512

// reason is the Reason header, else the start of a plain-text body.
func reason(h http.Header, body []byte) string {
	if r := h.Get("Reason"); r != "" {
		return r
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		return ""
	}
	s := strings.TrimSpace(string(body[:min(len(body), maxReasonBytes)]))
	return strings.ToValidUTF8(s, "?")
}

// parseRetryAfter reads a Retry-After of delay-seconds or an HTTP date;
// anything else is 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// backoff is the wait before attempt (counted from 0): BackoffMin doubled
// per retry up to BackoffMax, with half of it jittered so that clients
// failed by the same fault do not retry in step; never less than the
// node's Retry-After, capped at MaxRetryAfter.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := c.cfg.BackoffMax
	if shift := attempt - 1; shift < 30 && c.cfg.BackoffMin<<shift < d {
		d = c.cfg.BackoffMin << shift
	}
	if d > 0 {
		d = d/2 + rand.N(d/2+1)
	}
	return max(d, min(retryAfter, c.cfg.MaxRetryAfter))
}

// sleep waits for d, or returns ctx's error once it is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
