package transport

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
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
}

// NewHandler returns a Handler for core, entering it through enter, which
// runs f under the node lock and reports whether it ran (the server's
// Serial.Do; false once the node is stopped). replyTimeout bounds the
// wait for the node's reply; past it the client gets 503 with Retry-After.
func NewHandler(core Core, enter func(f func()) bool, replyTimeout time.Duration, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{core: core, enter: enter, replyTimeout: replyTimeout, log: log}
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
	// Buffered so a reply that comes after the client left, or after the
	// ceiling, never blocks the node; the channel is garbage then.
	replies := make(chan node.Response, 1)
	reply := func(resp node.Response) {
		select {
		case replies <- resp:
		default:
			h.log.Error("node replied twice", "method", req.Method, "url", req.URL)
		}
	}
	if !h.enter(func() { h.core.Handle(req, reply) }) {
		writeUnavailable(w, "node is stopping")
		return
	}
	// Most replies are synchronous: take them without arming a timer.
	select {
	case resp := <-replies:
		h.writeResponse(w, resp)
		return
	default:
	}
	ceiling := time.NewTimer(h.replyTimeout)
	defer ceiling.Stop()
	select {
	case resp := <-replies:
		h.writeResponse(w, resp)
	case <-r.Context().Done():
		// The client went away; nothing to write to.
	case <-ceiling.C:
		h.log.Warn("node did not reply in time", "method", req.Method, "url", req.URL, "timeout", h.replyTimeout)
		writeUnavailable(w, fmt.Sprintf("no reply within %v", h.replyTimeout))
	}
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

// writeResponse writes the node's reply.
func (h *Handler) writeResponse(w http.ResponseWriter, resp node.Response) {
	if resp.Status < 100 || resp.Status > 999 {
		h.log.Error("node replied with an invalid status", "status", resp.Status)
		WriteError(w, http.StatusInternalServerError, "invalid reply from node")
		return
	}
	hdr := w.Header()
	// One backing array for every field's value, not one a field.
	vals := make([]string, 0, len(resp.Header)+1)
	for k, v := range resp.Header {
		vals = append(vals, v)
		hdr[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	vals = append(vals, strconv.Itoa(len(resp.Body)))
	hdr["Content-Length"] = vals[len(vals)-1:]
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
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
