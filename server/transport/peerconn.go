package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// A peer's batched queue (requests between nodes that write, alone or in
// batches) is served over connections its workers hold themselves: each
// worker writes its request and reads the answer on its own connection,
// in its own goroutine. Through http.Transport the same exchange passed
// through the transport's writing and reading goroutines of the
// connection, a hand-off each way, and a context, a trace and a timer of
// its own; under the three-node rf 2 load those were about a third of
// what a node spent sending to its peers (docs/design.md 5.3). The wire
// is the same HTTP/1.1, to the same handler. A worker that leaves closes
// its connection; so does Close, for every one.

// linkDialer is how a Client dials the connections (links) the workers
// of its peers' batched queues hold; without one (a test's own
// transport) those go through peerRT as any other request. Not to be
// confused with the callbacks' own connections (directConn, direct.go).
type linkDialer struct {
	dial func(context.Context, string, string) (net.Conn, error)
	tls  *tls.Config // for https peers, else nil
}

// link is a batched-queue worker's connection to its peer: nil until the
// first request and after a failure.
type link struct {
	pc *peerConn
	// out and in are the bodies of its last batch and of the answer,
	// each for the next to fill: a batch is written and its answer read
	// (each sub-response copied out of it) within the round trip.
	out, in []byte
}

// linkBufferMax bounds the bodies a link keeps for the next batch.
const linkBufferMax = 64 << 10

// keep holds b for the next batch unless it is larger than linkBufferMax.
func keep(b []byte) []byte {
	if cap(b) > linkBufferMax {
		return nil
	}
	return b[:0]
}

// peerConn is one HTTP/1.1 connection to a peer.
type peerConn struct {
	conn   net.Conn
	br     *bufio.Reader
	head   []byte
	reused bool // it carried an exchange before
}

// directTrip performs req, whose target is target, on l's connection,
// dialing one if l has none, and returns how long it took from having the
// connection (noConn if it never had one). It is shed if no connection is
// had by queueEnd, and fails if its answer has not come within timeout
// of having one, or is larger than limit. A connection that carried an
// exchange before and fails before a byte of the answer is read (the
// peer closed it while idle, or restarted) is replaced and the request
// sent again once: requests between nodes that write are PUT and DELETE,
// and a batch carries only those.
//
// into, if not nil, is where the answer's body is read when it fits.
func (c *Client) directTrip(l *link, key, target string, req node.Request, queueEnd time.Time, timeout time.Duration, limit int64, into []byte) (node.Response, time.Duration, error) {
	for again := true; ; again = false {
		if l.pc == nil {
			pc, err := c.dialPeer(key, queueEnd)
			if err != nil {
				return node.Response{}, noConn, err
			}
			l.pc = pc
		}
		start := time.Now()
		resp, keep, nothingRead, err := l.pc.exchange(key, target, req, start.Add(timeout), limit, into)
		if err == nil && keep {
			l.pc.reused = true
			return resp, time.Since(start), nil
		}
		reused := l.pc.reused
		c.hangUp(l)
		if err == nil {
			return resp, time.Since(start), nil
		}
		if c.base.Err() != nil {
			return node.Response{}, time.Since(start), fmt.Errorf("server: %s %s: %w", req.Method, req.URL, ErrClientClosed)
		}
		if again && reused && nothingRead {
			continue
		}
		if errors.Is(err, errDeadline) {
			err = fmt.Errorf("no response within %v of the request's writing: %w", timeout, context.DeadlineExceeded)
		}
		return node.Response{}, time.Since(start), fmt.Errorf("server: %w", &url.Error{Op: urlErrorOp(req.Method), URL: req.URL, Err: err})
	}
}

// errDeadline stands for a connection's deadline passing.
var errDeadline = errors.New("deadline")

// dialPeer connects to the peer of key ("http://host:port") by queueEnd,
// over TLS when the Client's peers take https, and registers the
// connection for Close.
func (c *Client) dialPeer(key string, queueEnd time.Time) (*peerConn, error) {
	addr := strings.TrimPrefix(key, "http://")
	ctx, cancel := context.WithDeadline(c.base, queueEnd)
	defer cancel()
	conn, err := c.linkDial.dial(ctx, "tcp", addr)
	if err == nil && c.linkDial.tls != nil {
		cfg := c.linkDial.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(conn, cfg)
		if err = tc.HandshakeContext(ctx); err != nil {
			conn.Close()
		}
		conn = tc
	}
	switch {
	case c.base.Err() != nil:
		if err == nil {
			conn.Close()
		}
		return nil, fmt.Errorf("server: %s: %w", key, ErrClientClosed)
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("%w: no connection within the queue wait limit: %w", shedError(key, "dial"), err)
	case err != nil:
		return nil, fmt.Errorf("server: %w", &url.Error{Op: "Dial", URL: key, Err: err})
	}
	pc := &peerConn{conn: conn, br: bufio.NewReader(conn)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		conn.Close()
		return nil, fmt.Errorf("server: %s: %w", key, ErrClientClosed)
	}
	c.conns[pc] = struct{}{}
	return pc, nil
}

// hangUp closes l's connection, if any, and forgets it.
func (c *Client) hangUp(l *link) {
	if l == nil || l.pc == nil {
		return
	}
	c.mu.Lock()
	delete(c.conns, l.pc)
	c.mu.Unlock()
	l.pc.conn.Close()
	l.pc = nil
}

// exchange writes req to target and reads the answer, of at most limit
// bytes, all by deadline. keep says the connection may carry another
// exchange; nothingRead that it failed before a byte of the answer.
func (pc *peerConn) exchange(key, target string, req node.Request, deadline time.Time, limit int64, into []byte) (resp node.Response, keep, nothingRead bool, err error) {
	head, err := appendHead(pc.head[:0], key, target, req)
	pc.head = head[:0]
	if err != nil {
		return node.Response{}, false, false, err
	}
	if err := pc.conn.SetDeadline(deadline); err != nil {
		return node.Response{}, false, true, err
	}
	bufs := net.Buffers{head, req.Body}
	if _, err := bufs.WriteTo(pc.conn); err != nil {
		return node.Response{}, false, true, timedOut(err)
	}
	if _, err := pc.br.Peek(1); err != nil {
		return node.Response{}, false, true, timedOut(err)
	}
	resp, keep, err = readAnswer(pc.br, limit, into)
	var stage *readError
	switch {
	case errors.Is(err, errBodyTooLarge):
		err = fmt.Errorf("response body larger than %d bytes", limit)
	case errors.As(err, &stage):
		err = fmt.Errorf("read response: %w", timedOut(stage.err))
	case err != nil:
		err = timedOut(err)
	}
	return resp, keep, false, err
}

// timedOut names a passed deadline errDeadline.
func timedOut(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %w", errDeadline, err)
	}
	return err
}

// appendHead appends the request line and header fields of req, to
// target at the peer of key, to b. A method or field an HTTP request
// could not carry is refused, as net/http refuses it.
func appendHead(b []byte, key, target string, req node.Request) ([]byte, error) {
	if !isToken([]byte(req.Method)) || target == "" || strings.ContainsAny(target, " \t\r\n") {
		return b, fmt.Errorf("invalid method %q or target %q", req.Method, target)
	}
	b = append(b, req.Method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, strings.TrimPrefix(key, "http://")...)
	b = append(b, "\r\n"...)
	for k, v := range req.Header {
		if !isToken([]byte(k)) || !isFieldValue([]byte(v)) || strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Host") {
			return b, fmt.Errorf("invalid header field %q", k)
		}
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
	}
	if len(req.Body) > 0 || req.Method == http.MethodPut || req.Method == http.MethodPost {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.Body)), 10)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...), nil
}
