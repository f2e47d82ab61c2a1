package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// The batch format carries several node-to-node requests in one HTTP
// request to BatchPath, and their responses in one response. It is a
// transport detail of the production adapter: the receiving handler hands
// each sub-request to the node as if it had arrived alone, and the sender
// gives each sub-request its own outcome (docs/api.md, "Batches").
//
// Both bodies are a magic of four bytes, a version byte, and a count, then
// the entries; every number is an unsigned varint (encoding/binary), every
// string or body a varint length followed by its bytes.
//
//	request:  "CHBQ" version count { method target headers body }*
//	response: "CHBA" version count { status headers body }*
//	headers:  count { name value }*
//
// A sub-request's target is the request target a lone request would carry
// on its request line: path and query. Anything else (another magic or
// version, a length past the end, a count over its limit, bytes after the
// last entry, a name or value HTTP could not carry) is refused whole.
const (
	// BatchPath is the internal endpoint that takes a batch.
	BatchPath = "/internal/batch"
	// batchContentType names the format in the Content-Type of both bodies.
	batchContentType = "application/x-chronos-batch"
	// batchVersion is the version byte this node writes and reads.
	batchVersion = 1
	// batchMaxRequests bounds the sub-requests of one batch.
	batchMaxRequests = 64
	// batchMaxBytes bounds the body of a batch request. A request whose
	// entry alone is larger is sent alone.
	batchMaxBytes = 1 << 20
	// batchMaxHeaders bounds the header fields of one entry.
	batchMaxHeaders = 32
	// batchMaxHeadBytes bounds the method, target and header fields of
	// one entry, as the HTTP server bounds a lone request's.
	batchMaxHeadBytes = MaxHeaderBytes
)

// The magics of the two bodies.
const (
	batchRequestMagic  = "CHBQ"
	batchResponseMagic = "CHBA"
)

// batchResponseLimit bounds the body of the response to a batch of n: each
// sub-response's body may be as large as a lone response's, and its head
// as large as a request head.
func batchResponseLimit(n int) int64 {
	return int64(n) * (wire.MaxBodyBytes + batchMaxHeadBytes + 4*binary.MaxVarintLen64)
}

// errBatch is the error, wrapped with the reason, of a malformed batch.
var errBatch = errors.New("malformed batch")

// appendBatchRequest appends the batch of reqs, whose URLs are request
// targets, to b.
func appendBatchRequest(b []byte, reqs []node.Request) []byte {
	b = append(b, batchRequestMagic...)
	b = append(b, batchVersion)
	b = binary.AppendUvarint(b, uint64(len(reqs)))
	for i := range reqs {
		b = appendString(b, reqs[i].Method)
		b = appendString(b, reqs[i].URL)
		b = appendHeader(b, reqs[i].Header)
		b = appendBytes(b, reqs[i].Body)
	}
	return b
}

// appendBatchResponse appends the responses resps to b.
func appendBatchResponse(b []byte, resps []node.Response) []byte {
	b = append(b, batchResponseMagic...)
	b = append(b, batchVersion)
	b = binary.AppendUvarint(b, uint64(len(resps)))
	for i := range resps {
		b = binary.AppendUvarint(b, uint64(resps[i].Status))
		b = appendHeader(b, resps[i].Header)
		b = appendBytes(b, resps[i].Body)
	}
	return b
}

// batchEntrySize is an upper bound of the bytes req takes in a batch, its
// URL being its target.
func batchEntrySize(req node.Request) int {
	n := 4*binary.MaxVarintLen64 + len(req.Method) + len(req.URL) + len(req.Body)
	for k, v := range req.Header {
		n += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	return n
}

// batchHeadSize is an upper bound of the frame around the entries.
const batchHeadSize = len(batchRequestMagic) + 1 + binary.MaxVarintLen64

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBytes(b, s []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendHeader(b []byte, h node.Header) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	for k, v := range h {
		b = appendString(appendString(b, k), v)
	}
	return b
}

// parseBatchRequest reads a batch request body. Each request's URL is its
// target as a lone request's would be (path and query), its header
// canonical as net/http gives it, and its body a copy of its own.
func parseBatchRequest(body []byte) ([]node.Request, error) {
	r := frameReader{b: body}
	n := r.head(batchRequestMagic, batchMaxRequests)
	reqs := make([]node.Request, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		r.entry = i
		start := len(r.b)
		method := r.token("method")
		target := r.target()
		h := r.header()
		if r.err == nil && start-len(r.b) > batchMaxHeadBytes {
			r.fail("method, target and header fields take %d bytes, more than %d", start-len(r.b), batchMaxHeadBytes)
		}
		b := r.body(wire.MaxBodyBytes)
		reqs = append(reqs, node.Request{Method: method, URL: target, Header: h, Body: b})
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return reqs, nil
}

// parseBatchResponse reads the response to a batch of want requests.
func parseBatchResponse(body []byte, want int) ([]node.Response, error) {
	r := frameReader{b: body}
	n := r.head(batchResponseMagic, want)
	if r.err == nil && n != want {
		r.fail("%d responses to %d requests", n, want)
	}
	resps := make([]node.Response, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		r.entry = i
		start := len(r.b)
		status := r.uvarint("status", 999)
		if r.err == nil && status < 100 {
			r.fail("status %d", status)
		}
		h := r.header()
		if r.err == nil && start-len(r.b) > batchMaxHeadBytes {
			r.fail("status and header fields take %d bytes, more than %d", start-len(r.b), batchMaxHeadBytes)
		}
		b := r.body(len(r.b))
		resps = append(resps, node.Response{Status: int(status), Header: h, Body: b})
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return resps, nil
}

// frameReader reads a batch body; the first error stops it, and every
// later read returns zero values.
type frameReader struct {
	b     []byte
	err   error
	entry int // the entry being read, for errors; -1 before the first
	// prev is the header of the entry before, whose values the next
	// entry's equal ones share: the entries of one batch mostly carry
	// the same fields (Content-Type, the sender's instance, the
	// destination), and each would otherwise copy its own.
	prev node.Header
}

func (r *frameReader) fail(format string, args ...any) {
	if r.err != nil {
		return
	}
	if r.entry < 0 {
		r.err = fmt.Errorf("%w: %s", errBatch, fmt.Sprintf(format, args...))
		return
	}
	r.err = fmt.Errorf("%w: entry %d: %s", errBatch, r.entry, fmt.Sprintf(format, args...))
}

// head reads the magic, the version and the count, which must be 1 to max.
func (r *frameReader) head(magic string, max int) int {
	r.entry = -1
	if len(r.b) < len(magic)+1 || string(r.b[:len(magic)]) != magic {
		r.fail("the body does not start with %q (Content-Type %s)", magic, batchContentType)
		return 0
	}
	if v := r.b[len(magic)]; v != batchVersion {
		r.fail("format version %d; this node reads version %d", v, batchVersion)
		return 0
	}
	r.b = r.b[len(magic)+1:]
	n := r.uvarint("count", uint64(max))
	if r.err == nil && n == 0 {
		r.fail("no entries")
	}
	return int(n)
}

// uvarint reads a number of at most max.
func (r *frameReader) uvarint(what string, max uint64) uint64 {
	return r.number(what, "", max)
}

// number reads a number of at most max, named what+suffix in an error:
// the name is built only for the error, never for a number read well.
func (r *frameReader) number(what, suffix string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%s%s: not a varint", what, suffix)
		return 0
	}
	if v > max {
		r.fail("%s%s %d, more than %d", what, suffix, v, max)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes reads a length of at most max and that many bytes, not copied.
func (r *frameReader) bytes(what string, max int) []byte {
	n := r.number(what, " length", uint64(max))
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail("%s of %d bytes, past the end of the body", what, n)
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

// body reads a body of at most max bytes into a copy of its own, so that
// a body the node keeps does not hold the whole batch in memory.
func (r *frameReader) body(max int) []byte {
	b := r.bytes("body", max)
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// token reads an HTTP token: a method or a header field name.
func (r *frameReader) token(what string) string {
	b := r.bytes(what, batchMaxHeadBytes)
	if r.err == nil && !isToken(b) {
		r.fail("%s %q is not an HTTP token", what, b)
	}
	if t, ok := knownTokens[string(b)]; ok {
		return t
	}
	return string(b)
}

// knownTokens holds the methods and header field names nodes send each
// other, so that reading one in a batch does not copy it.
var knownTokens = func() map[string]string {
	m := make(map[string]string)
	for _, t := range []string{
		http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		node.HeaderContentType, node.HeaderContentRange, node.HeaderRange, node.HeaderVersion,
		node.HeaderSignature, node.HeaderSent, node.HeaderTo, node.HeaderCollision,
		node.HeaderStartDelta, node.HeaderPopped, node.HeaderInstance, node.HeaderInstanceClash,
		node.HeaderHeld, node.HeaderNextTimeFrom, wire.HeaderReason, wire.HeaderLocation,
		wire.HeaderSequenceNumber, wire.HeaderRetryAfter, wire.HeaderDeadline, wire.HeaderTimerID,
		"Content-Length",
	} {
		m[t] = t
	}
	return m
}()

// target reads a request target, which must be in origin form, and
// returns it as net/http's server would hand it over: RequestURI of the
// parsed target. A batch inside a batch is refused.
func (r *frameReader) target() string {
	b := r.bytes("target", batchMaxHeadBytes)
	if r.err != nil {
		return ""
	}
	s := string(b)
	u, err := url.ParseRequestURI(s)
	if err != nil || !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \t\r\n\x00#") {
		r.fail("target %q is not a path and query", s)
		return ""
	}
	if u.EscapedPath() == BatchPath {
		r.fail("a batch inside a batch")
		return ""
	}
	return u.RequestURI()
}

// header reads header fields, joining repeated names as nodeHeader does.
func (r *frameReader) header() node.Header {
	n := r.uvarint("header field count", batchMaxHeaders)
	if r.err != nil || n == 0 {
		return node.Header{}
	}
	h := make(node.Header, n)
	for range n {
		k := node.CanonicalKey(r.token("header field name"))
		v := r.bytes("header field value", batchMaxHeadBytes)
		if r.err == nil && !isFieldValue(v) {
			r.fail("header field %s has a control character", k)
		}
		if r.err != nil {
			return nil
		}
		switch old, ok := h[k]; {
		case ok:
			h[k] = old + ", " + string(v)
		case r.prev[k] == string(v) && r.prev[k] != "":
			h[k] = r.prev[k]
		default:
			h[k] = string(v)
		}
	}
	r.prev = h
	return h
}

// end reports the first error, or bytes left after the last entry.
func (r *frameReader) end() error {
	if r.err == nil && len(r.b) > 0 {
		r.entry = -1
		r.fail("%d bytes after the last entry", len(r.b))
	}
	return r.err
}

// isToken reports whether b is a non-empty RFC 9110 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// isFieldValue reports whether b can be an HTTP field value: no control
// character but horizontal tab.
func isFieldValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
