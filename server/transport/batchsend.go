package transport

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// batchTarget returns the request target of req if it may travel in a
// batch, or "". Requests between nodes that write (PUT and DELETE:
// replication, pop notices, tombstones, references) may: their answers
// are small. A callback never does, nor a read (GET: a resync page, a
// replica's record), whose answer may be as large as a body can be.
func batchTarget(req node.Request, kind int) string {
	if kind != kindPeer || (req.Method != http.MethodPut && req.Method != http.MethodDelete) {
		return ""
	}
	if t, ok := plainTarget(req.URL); ok {
		return t
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "" // sent alone, where the round trip fails
	}
	return u.RequestURI()
}

// plainTarget returns the request target of rawURL without parsing it,
// when it is plain enough for that to be what url.Parse and RequestURI
// make of it: an http or https URL, a host name or IPv4 address with a
// decimal port or none, a path from the first slash of characters that
// need no escape, and a query if any of such characters and "=" and "&".
// Every URL a node sends a peer is. Of any other it reports false.
func plainTarget(rawURL string) (string, bool) {
	rest, ok := strings.CutPrefix(rawURL, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(rawURL, "https://"); !ok {
			return "", false
		}
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 || !plainAuthority(rest[:slash]) {
		return "", false
	}
	target := rest[slash:]
	path, query, _ := strings.Cut(target, "?")
	if !plainChars(path, "/") || !plainChars(query, "=&") {
		return "", false
	}
	return target, true
}

// plainAuthority reports whether a is a host of letters, digits, dots and
// hyphens, followed by a colon and decimal digits or by nothing.
func plainAuthority(a string) bool {
	host, port, hasPort := strings.Cut(a, ":")
	if host == "" || !plainChars(host, "") || hasPort && (port == "" || strings.Trim(port, "0123456789") != "") {
		return false
	}
	return true
}

// plainChars reports whether s holds only unreserved characters (RFC 3986)
// and those of extra.
func plainChars(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// fill appends to buf, whose first request is taken from h's batched
// queue, the requests after it that share its timeout, up to the batch
// limits; c.mu is held. Only a queue that is waiting makes a batch: an
// idle peer gets each request alone, at once.
func (c *Client) fill(h *host, buf []*job) []*job {
	first := buf[0]
	size := batchHeadSize + first.size
	for len(buf) < c.limits.batchRequests {
		j := h.peek()
		if j == nil || j.timeout != first.timeout || size+j.size > c.limits.batchBytes {
			break
		}
		size += j.size
		buf = append(buf, h.pop())
	}
	return buf
}

// serveBatch performs jobs, taken together from h's batched queue, in one
// request to h's BatchPath, and queues their outcomes for the node in
// their order. A job that waited too long is shed alone; if one job is
// left it goes alone.
func (c *Client) serveBatch(h *host, l *link, jobs []*job) {
	out := make([]completion, len(jobs))
	live := make([]*job, 0, len(jobs))
	slots := make([]int, 0, len(jobs))
	for i, j := range jobs {
		out[i].done = j.done
		if out[i].err = c.refuse(h, j); out[i].err == nil {
			live, slots = append(live, j), append(slots, i)
		}
	}
	switch len(live) {
	case 0:
	case 1:
		out[slots[0]] = c.trip(h, l, live[0])
	default:
		for i, o := range c.sendBatch(h, l, live) {
			out[slots[i]] = o
		}
	}
	c.results.push(out...)
}

// sendBatch sends jobs in one batch and returns their outcomes in order.
// The batch must be written by the earliest end of their queue waits; a
// batch that fails fails each of them with its error.
func (c *Client) sendBatch(h *host, l *link, jobs []*job) []completion {
	reqs := make([]node.Request, len(jobs))
	size := batchHeadSize
	end := c.queueEnd(jobs[0])
	for i, j := range jobs {
		reqs[i] = node.Request{Method: j.req.Method, URL: j.target, Header: j.req.Header, Body: j.req.Body}
		size += j.size
		if e := c.queueEnd(j); e.Before(end) {
			end = e
		}
	}
	var body []byte
	if l != nil {
		body = appendBatchRequest(l.out, reqs)
	} else {
		body = appendBatchRequest(make([]byte, 0, size), reqs)
	}
	batch := node.Request{
		Method: http.MethodPost,
		URL:    h.key + BatchPath,
		Header: node.Header{node.HeaderContentType: batchContentType},
		Body:   body,
	}
	n := int64(len(jobs))
	c.count.inFlight.Add(n)
	var resp node.Response
	var took time.Duration
	var err error
	if l != nil {
		resp, took, err = c.directTrip(l, h.key, BatchPath, batch, end, jobs[0].timeout, batchResponseLimit(len(jobs)), l.in)
	} else {
		resp, took, err = c.roundTrip(batch, end, jobs[0].timeout, batchResponseLimit(len(jobs)))
	}
	c.count.inFlight.Add(-n)
	c.count.peerBatches.Add(1)
	c.count.peerBatched.Add(uint64(n))
	c.metrics.peerBatches.Inc()
	c.metrics.peerBatched.Add(float64(n))
	var resps []node.Response
	if err == nil {
		resps, err = readBatchResponse(resp, len(jobs))
	}
	if l != nil {
		// Written, and read into copies: both bodies are the link's again.
		l.out, l.in = keep(body), keep(resp.Body)
	}
	out := make([]completion, len(jobs))
	for i, j := range jobs {
		if err != nil {
			out[i] = c.outcome(h, j, node.Response{}, took, fmt.Errorf("server: %s %s: in a batch of %d: %w", j.req.Method, j.req.URL, n, err))
			continue
		}
		r, rerr := resps[i], error(nil)
		if len(r.Body) > wire.MaxBodyBytes {
			r, rerr = node.Response{}, fmt.Errorf("server: %s %s: response body larger than %d bytes", j.req.Method, j.req.URL, wire.MaxBodyBytes)
		}
		out[i] = c.outcome(h, j, r, took, rerr)
	}
	return out
}

// errBatchRefused is the error of a batch its peer answered with anything
// but 200 and a batch response.
var errBatchRefused = errors.New("batch refused")

// readBatchResponse reads the response to a batch of n.
func readBatchResponse(resp node.Response, n int) ([]node.Response, error) {
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("%w: %d %s", errBatchRefused, resp.Status, resp.Header.Get(wire.HeaderReason))
	}
	resps, err := parseBatchResponse(resp.Body, n)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBatchRefused, err)
	}
	return resps, nil
}
