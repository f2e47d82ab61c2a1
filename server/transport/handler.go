package transport

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// MaxHeaderBytes bounds the request line and header fields of a request
// to the node: what the HTTP server reads of a lone request, and of each
// entry of a batch.
const MaxHeaderBytes = 64 << 10

// Core is the part of a node the HTTP handler drives. *node.Node implements
// it; the adapter's own tests drive the handler with a fake.
type Core interface {
	Handle(req node.Request, reply func(node.Response))
}

// Handler serves HTTP by handing each request to the node through enter
// and writing the node's reply. Reading the body and waiting for the reply
// happen outside the lock, so a slow client never holds the node.
type Handler struct {
	core         Core
	enter        func(f func()) bool
	replyTimeout time.Duration
	log          *slog.Logger
	calls        sync.Pool // of *call
}

// NewHandler returns a Handler for core, entering it through enter, which
// runs f under the node lock and reports whether it ran (the server's
// Serial.Do; false once the node is stopped). replyTimeout bounds the
// wait for the node's reply; past it the client gets 503 with Retry-After.
func NewHandler(core Core, enter func(f func()) bool, replyTimeout time.Duration, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{core: core, enter: enter, replyTimeout: replyTimeout, log: log}
	h.calls.New = func() any { return newCall(h) }
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() == BatchPath { // as the node reads paths: as sent
		h.serveBatch(w, r)
		return
	}
	req, status, reason := readRequest(w, r)
	if status != 0 {
		WriteError(w, status, reason)
		return
	}
	c := h.calls.Get().(*call)
	c.start(req)
	if !h.enter(c.handle) {
		h.calls.Put(c.done()) // the node never saw it: nothing will reply
		writeUnavailable(w, "node is stopping")
		return
	}
	// Most replies are synchronous: take them without arming a timer.
	select {
	case resp := <-c.replies:
		h.writeResponse(w, resp, c)
		h.calls.Put(c.done())
		return
	default:
	}
	ceiling := time.NewTimer(h.replyTimeout)
	defer ceiling.Stop()
	// A call left waiting here is not reused: its reply may still come.
	select {
	case resp := <-c.replies:
		h.writeResponse(w, resp, c)
		h.calls.Put(c.done())
	case <-r.Context().Done():
		// The client went away; nothing to write to.
	case <-ceiling.C:
		h.log.Warn("node did not reply in time", "method", req.Method, "url", req.URL, "timeout", h.replyTimeout)
		writeUnavailable(w, fmt.Sprintf("no reply within %v", h.replyTimeout))
	}
}

// call is one request's passage through the node: the request, the reply
// function the node is handed with it, and the channel the reply comes
// back on. The Handler pools calls so that a request allocates only its
// reply function; a call is reused only once its reply was taken (or the
// node never ran it), and the reply function is bound to the request it
// was made for, so that a reply the node sends twice is logged, never
// delivered to a later request.
type call struct {
	h       *Handler
	replies chan node.Response // buffered: a reply never blocks the node
	handle  func()             // c.run, bound once so entering allocates nothing

	req   node.Request
	reply func(node.Response)
	// vals backs the reply's header values (writeResponse): net/http
	// copies them when the header is written, so the array is the
	// call's own again once writeResponse returns.
	vals []string

	mu       sync.Mutex
	gen      uint64 // counts the requests the call has served
	answered bool   // the request of gen has its reply
}

func newCall(h *Handler) *call {
	c := &call{h: h, replies: make(chan node.Response, 1)}
	c.handle = c.run
	return c
}

// start readies c for req, a request of its own.
func (c *call) start(req node.Request) {
	c.mu.Lock()
	c.gen++
	gen := c.gen
	c.answered = false
	c.mu.Unlock()
	c.req = req
	method, url := req.Method, req.URL
	c.reply = func(resp node.Response) {
		if !c.deliver(gen, resp) {
			c.h.log.Error("node replied twice", "method", method, "url", url)
		}
	}
}

// run hands the request to the node; it runs under the node lock.
func (c *call) run() { c.h.core.Handle(c.req, c.reply) }

// deliver passes on the reply to request gen if it is the first, and
// reports whether it was.
func (c *call) deliver(gen uint64, resp node.Response) bool {
	c.mu.Lock()
	first := gen == c.gen && !c.answered
	c.answered = c.answered || first
	c.mu.Unlock()
	if first {
		c.replies <- resp
	}
	return first
}

// done lets go of what c's request held, for the pool.
func (c *call) done() *call {
	c.req, c.reply = node.Request{}, nil
	return c
}

// readRequest converts r into a node request. A non-zero status means the
// request was refused with that status and reason.
func readRequest(w http.ResponseWriter, r *http.Request) (node.Request, int, string) {
	b, status, reason := readRequestBody(w, r, wire.MaxBodyBytes, tooBig)
	if status != 0 {
		return node.Request{}, status, reason
	}
	return node.Request{
		Method: r.Method,
		URL:    r.URL.RequestURI(),
		Header: nodeHeader(r.Header),
		Body:   b,
		Remote: r.RemoteAddr,
	}, 0, ""
}

// readRequestBody reads r's body of at most limit bytes. A non-zero status
// means it was refused with that status and reason: tooBig for a body
// over the limit.
func readRequestBody(w http.ResponseWriter, r *http.Request, limit int64, tooBig string) ([]byte, int, string) {
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, tooBig
	}
	body := r.Body
	if r.ContentLength < 0 {
		// Of unknown length: bounded here. A known length is bounded
		// above, and net/http reads no further than it.
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	b, err := readBody(body, r.ContentLength)
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, http.StatusRequestEntityTooLarge, tooBig
		}
		return nil, http.StatusBadRequest, "cannot read request body"
	}
	return b, 0, ""
}

// tooBig is the reason a request body over wire.MaxBodyBytes is refused.
var tooBig = fmt.Sprintf("request body larger than %d bytes", wire.MaxBodyBytes)

// readBody reads all of rd, allocating once when the length is known.
func readBody(rd io.Reader, length int64) ([]byte, error) {
	if length == 0 {
		return nil, nil
	}
	if length > 0 {
		body := make([]byte, length)
		if _, err := io.ReadFull(rd, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	body, err := io.ReadAll(rd)
	if len(body) == 0 {
		body = nil
	}
	return body, err
}

// nodeHeader flattens HTTP header fields, of requests and of responses, to
// the node's single values; repeated fields join with ", " as RFC 9110
// allows.
func nodeHeader(hh http.Header) node.Header {
	h := make(node.Header, len(hh))
	for k, v := range hh {
		switch len(v) {
		case 0:
		case 1:
			h.Set(k, v[0])
		default:
			h.Set(k, strings.Join(v, ", "))
		}
	}
	return h
}

// putHeader sets the fields of dst to the single values of src, every
// value in one backing array rather than one a field, and returns the
// array's spare room, for more values.
func putHeader(dst http.Header, src node.Header, more int) []string {
	return putHeaderInto(dst, src, make([]string, 0, len(src)+more))
}

// putHeaderInto is putHeader with the backing array given: vals, whose
// capacity must hold every value of src and the room to spare.
func putHeaderInto(dst http.Header, src node.Header, vals []string) []string {
	for k, v := range src {
		vals = append(vals, v)
		dst[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	return vals[len(vals):]
}

// writeResponse writes the node's reply, its header values backed by c's
// array (grown when too small): WriteHeader copies the header net/http
// writes (it clones the handler's header), so the array is c's again once
// WriteHeader returns, for c's next request.
func (h *Handler) writeResponse(w http.ResponseWriter, resp node.Response, c *call) {
	if resp.Status < 100 || resp.Status > 999 {
		h.log.Error("node replied with an invalid status", "status", resp.Status)
		WriteError(w, http.StatusInternalServerError, "invalid reply from node")
		return
	}
	if need := len(resp.Header) + 1; cap(c.vals) < need {
		c.vals = make([]string, 0, max(need, 4))
	}
	hdr := w.Header()
	vals := putHeaderInto(hdr, resp.Header, c.vals[:0])
	hdr["Content-Length"] = append(vals, strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
	clear(c.vals[:cap(c.vals)]) // hold no value past the reply
}

// WriteError answers with status and the reason both in the Reason header
// and as the plain-text body (docs/design.md 4.4), as the node answers an
// error.
func WriteError(w http.ResponseWriter, status int, reason string) {
	hdr := w.Header()
	hdr.Set(wire.HeaderReason, reason)
	hdr.Set(node.HeaderContentType, "text/plain; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(reason)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, reason)
}

// writeUnavailable answers 503 with a Retry-After, so a client retries,
// possibly on another node.
func writeUnavailable(w http.ResponseWriter, reason string) {
	w.Header().Set(wire.HeaderRetryAfter, "1")
	WriteError(w, http.StatusServiceUnavailable, reason)
}
