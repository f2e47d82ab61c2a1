package transport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// batchTooBig is the reason a batch body over batchMaxBytes is refused.
var batchTooBig = fmt.Sprintf("batch body larger than %d bytes", batchMaxBytes)

// serveBatch answers a request to BatchPath. Each sub-request goes to the
// node as if it had arrived alone (its method, target, header fields with
// its own signature, and body), in order under one entry into the node,
// and its reply, or the 503 a lone request would get when the node does
// not reply in time, goes back in one batch response. A malformed batch is
// refused whole with 400 and its reason, and nothing of it reaches the
// node.
func (h *Handler) serveBatch(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		WriteError(w, http.StatusMethodNotAllowed, "method not allowed; allowed: POST")
		return
	}
	buf := batchBodies.Get().(*[]byte)
	defer putBatchBody(buf)
	body, status, reason := readBatchBody(w, r, (*buf)[:0])
	*buf = body
	if status != 0 {
		WriteError(w, status, reason)
		return
	}
	reqs, err := parseBatchRequest(body) // copies what it keeps
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	for i := range reqs {
		reqs[i].Remote = r.RemoteAddr // each came over the batch's connection
	}
	resps, ok := h.handleBatch(r.Context(), reqs)
	if !ok {
		writeUnavailable(w, "node is stopping")
		return
	}
	if resps == nil {
		return // the peer went away; nothing to write to
	}
	for i := range reqs {
		if reqs[i].Method == http.MethodHead {
			resps[i].Body = nil // as net/http sends a lone HEAD's answer
		}
	}
	out := appendBatchResponse((*buf)[:0], resps)
	*buf = out
	hdr := w.Header()
	hdr.Set(node.HeaderContentType, batchContentType)
	hdr.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// batchBodies pools the buffers a batch request is read into and its
// response written from: the request's entries are copied out of it, and
// the response is copied into the connection's buffer by Write.
var batchBodies = sync.Pool{New: func() any { return new([]byte) }}

// putBatchBody pools b unless it grew past what is worth keeping.
func putBatchBody(b *[]byte) {
	if cap(*b) <= linkBufferMax {
		*b = (*b)[:0]
		batchBodies.Put(b)
	}
}

// readBatchBody reads r's body, of at most batchMaxBytes, into buf when it
// fits; a non-zero status is its refusal, as readRequestBody's.
func readBatchBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, int, string) {
	if n := r.ContentLength; n > 0 && n <= int64(cap(buf)) {
		b := buf[:n]
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, http.StatusBadRequest, "cannot read request body"
		}
		return b, 0, ""
	}
	return readRequestBody(w, r, batchMaxBytes, batchTooBig)
}

// handleBatch hands reqs to the node under one entry and waits for their
// replies, at most h.replyTimeout. It reports false if the node is
// stopping, and returns nil if ctx ended first.
func (h *Handler) handleBatch(ctx context.Context, reqs []node.Request) ([]node.Response, bool) {
	rs := newBatchReplies(len(reqs))
	if !h.enter(func() {
		for i := range reqs {
			h.core.Handle(reqs[i], rs.reply(h, reqs[i], i))
		}
	}) {
		return nil, false
	}
	select {
	case <-rs.all:
		return rs.close(h, 0), true
	default:
	}
	ceiling := time.NewTimer(h.replyTimeout)
	defer ceiling.Stop()
	select {
	case <-rs.all:
	case <-ctx.Done():
		rs.close(h, 0)
		return nil, true
	case <-ceiling.C:
	}
	return rs.close(h, h.replyTimeout), true
}

// batchReplies collects the node's replies to the sub-requests of a batch.
type batchReplies struct {
	mu     sync.Mutex
	resps  []node.Response
	got    []bool
	left   int
	closed bool
	all    chan struct{} // closed when every sub-request has its reply
}

func newBatchReplies(n int) *batchReplies {
	return &batchReplies{resps: make([]node.Response, n), got: make([]bool, n), left: n, all: make(chan struct{})}
}

// reply returns the reply function of sub-request i. A reply after the
// batch was answered, like a lone request's after its client left, is
// dropped.
func (rs *batchReplies) reply(h *Handler, req node.Request, i int) func(node.Response) {
	return func(resp node.Response) {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		switch {
		case rs.got[i]:
			h.log.Error("node replied twice", "method", req.Method, "url", req.URL)
		case rs.closed:
		default:
			rs.resps[i], rs.got[i] = checkReply(h, resp), true
			if rs.left--; rs.left == 0 {
				close(rs.all)
			}
		}
	}
}

// close ends the collection and returns the replies; a sub-request without
// one gets the 503 a lone request gets after waited.
func (rs *batchReplies) close(h *Handler, waited time.Duration) []node.Response {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.closed = true
	if rs.left > 0 && waited > 0 {
		h.log.Warn("node did not reply in time", "url", BatchPath, "unanswered", rs.left, "timeout", waited)
		for i, got := range rs.got {
			if !got {
				rs.resps[i] = errorReply(http.StatusServiceUnavailable, fmt.Sprintf("no reply within %v", waited))
			}
		}
	}
	return rs.resps
}

// checkReply returns resp, or the 500 a lone request gets when the node
// replies with an invalid status.
func checkReply(h *Handler, resp node.Response) node.Response {
	if resp.Status < 100 || resp.Status > 999 {
		h.log.Error("node replied with an invalid status", "status", resp.Status)
		return errorReply(http.StatusInternalServerError, "invalid reply from node")
	}
	return resp
}

// errorReply is the response WriteError, or for 503 writeUnavailable,
// writes, as a sub-response.
func errorReply(status int, reason string) node.Response {
	hdr := node.Header{wire.HeaderReason: reason, node.HeaderContentType: "text/plain; charset=utf-8"}
	if status == http.StatusServiceUnavailable {
		hdr[wire.HeaderRetryAfter] = "1"
	}
	return node.Response{Status: status, Header: hdr, Body: []byte(reason)}
}
