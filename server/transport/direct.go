package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// A callback to a plain http:// URL goes over a connection of the worker
// that serves it (directConn), written and read by that worker itself:
// HTTP/1.1, one request at a time, kept alive between requests. Through
// net/http's Transport each round trip took a request and its context,
// the connection pool's bookkeeping and three hand-offs between
// goroutines (the caller, the connection's writer and its reader); a
// worker already performs one round trip at a time to one host, so it can
// own its connection. The connection is dialed as the Transport's are
// (the callback policy's Control hook, the static DNS records), bounded
// by the request's queue wait (past it the request is shed, as one that
// had no connection); the request's timeout counts from when it has its
// connection, as a deadline on the connection. Anything else, a callback
// to https, a URL with user information or a request target the check
// below does not pass as it stands, and every request between nodes, goes
// through the Transport as before. Measured in docs/design.md section 5.
//
// peerconn.go does the same for a peer's batched queue. A callback's
// connection differs: it is dialed under the callback policy, not from
// the node's address; a request that failed on a kept connection is not
// sent again (a POST the sink may have taken: a callback made twice),
// so a connection idle for a while is checked before it is used instead;
// the Host field is the URL's, as the Transport sends it; and interim
// answers are passed over.

// directIdleCheck is how long a kept connection may have been idle before
// it is checked, without blocking, for the server having closed it (an
// idle timeout) before it is used again; a connection used more recently
// is reused unchecked, as the Transport reuses one its reader has not yet
// seen closed.
var directIdleCheck = time.Second // a variable for tests

// directConn is a worker's own connection to its host, for callbacks.
type directConn struct {
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	// stop unregisters the hook that aborts the connection's round trip
	// when the Client closes.
	stop func() bool
	// used is when the connection was last answered on.
	used time.Time
}

// close closes dc's connection, if it has one.
func (dc *directConn) close() {
	if dc.conn == nil {
		return
	}
	dc.stop()
	_ = dc.conn.Close()
	dc.conn, dc.stop = nil, nil
}

// directTarget returns the Host header and the request target of a
// callback to rawURL when it can go over a worker's own connection: an
// http:// URL with no user information whose target holds only printable
// ASCII that needs no escaping. ok is false for any other.
func directTarget(rawURL string) (hostport, target string, ok bool) {
	rest, ok := strings.CutPrefix(rawURL, "http://")
	if !ok {
		return "", "", false
	}
	i := strings.IndexAny(rest, "/?#")
	if i < 0 {
		i = len(rest)
	}
	hostport, target = rest[:i], rest[i:]
	if hostport == "" || strings.ContainsAny(hostport, "@%") || !plain(hostport) {
		return "", "", false
	}
	if j := strings.IndexByte(target, '#'); j >= 0 {
		target = target[:j]
	}
	if !plain(target) {
		return "", "", false
	}
	switch {
	case target == "":
		target = "/"
	case target[0] == '?':
		target = "/" + target
	}
	return hostport, target, true
}

// plain reports whether s holds only printable ASCII that a URL never
// needs escaped.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b <= ' ' || b >= 0x7f:
			return false
		case strings.IndexByte("\"<>\\^`{|}", b) >= 0:
			return false
		}
	}
	return true
}

// callbackDirect reports whether j goes over its worker's own connection.
func (c *Client) callbackDirect(j *job) bool {
	if c.directDial == nil || j.kind != kindCallback || j.req.Method != http.MethodPost {
		return false
	}
	_, _, ok := directTarget(j.req.URL)
	return ok && validHeader(j.req.Header)
}

// validHeader reports whether every field of h can be written as it is.
func validHeader(h node.Header) bool {
	for k, v := range h {
		if k == "" || strings.ContainsAny(k, " :\r\n\t") || strings.ContainsAny(v, "\r\n") {
			return false
		}
		switch strings.ToLower(k) {
		case "host", "content-length", "transfer-encoding", "connection":
			return false
		}
	}
	return true
}

// tripDirect performs j over dc, dialing it first if it has no
// connection, and returns its outcome.
func (c *Client) tripDirect(h *host, j *job, dc *directConn) completion {
	c.count.inFlight.Add(1)
	resp, took, err := c.roundTripDirect(h, j, dc)
	c.count.inFlight.Add(-1)
	return c.outcome(h, j, resp, took, err)
}

// roundTripDirect is roundTrip over dc. A connection that failed, or that
// may not carry another request, is closed.
func (c *Client) roundTripDirect(h *host, j *job, dc *directConn) (node.Response, time.Duration, error) {
	req := j.req
	if dc.conn != nil && !dc.usable() {
		dc.close()
	}
	if dc.conn == nil {
		if err := c.dialDirect(h, j, dc); err != nil {
			return node.Response{}, noConn, err
		}
	}
	wrote := time.Now()
	_ = dc.conn.SetDeadline(wrote.Add(j.timeout))
	if c.base.Err() != nil { // closed since the hook last fired
		_ = dc.conn.SetDeadline(time.Unix(1, 0))
	}
	resp, keep, err := dc.exchange(req, wire.MaxBodyBytes)
	took := time.Since(wrote)
	if err != nil || !keep {
		dc.close()
	}
	var stage *readError
	switch {
	case err == nil:
		dc.used = time.Now()
		return resp, took, nil
	case c.base.Err() != nil:
		err = fmt.Errorf("server: %s %s: %w", req.Method, req.URL, ErrClientClosed)
	case isTimeout(err):
		err = fmt.Errorf("server: %s %s: no response within %v of the request's writing: %w", req.Method, req.URL, j.timeout, context.DeadlineExceeded)
	case errors.Is(err, errBodyTooLarge):
		err = fmt.Errorf("server: %s %s: response body larger than %d bytes", req.Method, req.URL, wire.MaxBodyBytes)
	case errors.As(err, &stage):
		err = fmt.Errorf("server: %s %s: read response: %w", req.Method, req.URL, stage.err)
	default:
		// Named as the Transport's are: "Post \"http://...\": ...".
		err = fmt.Errorf("server: %w", &url.Error{Op: urlErrorOp(req.Method), URL: req.URL, Err: err})
	}
	return node.Response{}, took, err
}

// readError is an error reading a response's body.
type readError struct{ err error }

func (e *readError) Error() string { return "read response: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// usable reports whether dc's kept connection may carry the next
// request: used recently, or, idle longer, not closed by the server
// meanwhile (checked without blocking where the system allows).
func (dc *directConn) usable() bool {
	if time.Since(dc.used) < directIdleCheck {
		return true
	}
	return peekOpen(dc.conn)
}

// dialDirect gives dc a connection to h, within j's queue wait: a
// request that has none by then is shed.
func (c *Client) dialDirect(h *host, j *job, dc *directConn) error {
	ctx, cancel := context.WithDeadline(c.base, c.queueEnd(j))
	defer cancel()
	addr := strings.TrimPrefix(h.key, "http://")
	conn, err := c.directDial(ctx, "tcp", addr)
	if err != nil {
		switch {
		case c.base.Err() != nil:
			return fmt.Errorf("server: %s %s: %w", j.req.Method, j.req.URL, ErrClientClosed)
		case ctx.Err() != nil:
			return fmt.Errorf("server: %s %s: %w: no connection within the queue wait limit", j.req.Method, j.req.URL, ErrShed)
		}
		return fmt.Errorf("server: %w", &url.Error{Op: urlErrorOp(j.req.Method), URL: j.req.URL, Err: err})
	}
	*dc = directConn{conn: conn, br: bufio.NewReaderSize(conn, 4096), bw: bufio.NewWriterSize(conn, 4096)}
	// Close aborts a round trip still running at once, as cancelling its
	// context does for the Transport's.
	dc.stop = context.AfterFunc(c.base, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	return nil
}

// errBodyTooLarge is the error of a response body over the limit.
var errBodyTooLarge = errors.New("response body too large")

// exchange writes req on dc and reads its response, of a body of at most
// limit bytes; keep reports whether the connection may carry another
// request.
func (dc *directConn) exchange(req node.Request, limit int64) (resp node.Response, keep bool, err error) {
	hostport, target, _ := directTarget(req.URL)
	w := dc.bw
	w.WriteString(req.Method)
	w.WriteByte(' ')
	w.WriteString(target)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(hostport)
	w.WriteString("\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: ")
	var num [20]byte
	w.Write(strconv.AppendInt(num[:0], int64(len(req.Body)), 10))
	w.WriteString("\r\n")
	for k, v := range req.Header {
		w.WriteString(k)
		w.WriteString(": ")
		w.WriteString(v)
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
	w.Write(req.Body)
	if err := w.Flush(); err != nil {
		w.Reset(dc.conn)
		return node.Response{}, false, err
	}
	return readAnswer(dc.br, limit, nil)
}

// readAnswer reads the final response on br, passing over interim ones,
// with a body of at most limit bytes, read into into when it fits there
// (else into a new slice). keep reports whether the connection may carry
// another request: not when the server said so, answered as HTTP/1.0 or
// delimited the body by closing, nor when it sent more than was asked
// for. An error reading the body is a *readError; a body over the limit
// is errBodyTooLarge. The exchanges a worker makes over its own
// connection, a callback's (direct.go) and a peer's batch (peerconn.go),
// read their answers here.
func readAnswer(br *bufio.Reader, limit int64, into []byte) (resp node.Response, keep bool, err error) {
	hresp, err := readFinal(br)
	if err != nil {
		return node.Response{}, false, err
	}
	defer hresp.Body.Close()
	if hresp.ContentLength > limit {
		return node.Response{}, false, errBodyTooLarge
	}
	var rd io.Reader = hresp.Body
	if hresp.ContentLength < 0 {
		rd = io.LimitReader(hresp.Body, limit+1)
	}
	var body []byte
	if n := hresp.ContentLength; n > 0 && n <= int64(cap(into)) {
		body = into[:n]
		_, err = io.ReadFull(rd, body)
	} else {
		body, err = readBody(rd, hresp.ContentLength)
	}
	if err != nil {
		return node.Response{}, false, &readError{err}
	}
	if int64(len(body)) > limit {
		return node.Response{}, false, errBodyTooLarge
	}
	keep = !hresp.Close && br.Buffered() == 0
	return node.Response{Status: hresp.StatusCode, Header: nodeHeader(hresp.Header), Body: body}, keep, nil
}

// readFinal reads the final response from br, passing over interim (1xx)
// ones as the Transport does; after a 101 the connection is not HTTP's.
func readFinal(br *bufio.Reader) (*http.Response, error) {
	for {
		hresp, err := http.ReadResponse(br, nil)
		if err != nil {
			return nil, err
		}
		switch {
		case hresp.StatusCode == http.StatusSwitchingProtocols:
			hresp.Close = true
			return hresp, nil
		case hresp.StatusCode >= 200:
			return hresp, nil
		}
		_ = hresp.Body.Close()
	}
}
