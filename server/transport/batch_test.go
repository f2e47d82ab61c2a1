package transport

import (
	"encoding/binary"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/chronos-timer/chronos/node"
)

// sampleBatch is a batch as a node sends one: a replication PUT, a
// tombstone, and the references DELETE with a query.
func sampleBatch() []node.Request {
	return []node.Request{
		{Method: "PUT", URL: "/timers/0123456789abcdef0123456789abcdef",
			Header: node.Header{"Content-Type": "application/json", "X-Chronos-Signature": "ab12"}, Body: []byte(`{"timing":{}}`)},
		{Method: "PUT", URL: "/timers/fedcba9876543210fedcba9876543210", Header: node.Header{}, Body: []byte(`{"callback":{}}`)},
		{Method: "DELETE", URL: "/timers/references?x=%41", Header: node.Header{"Content-Type": "application/json"}},
	}
}

// sampleResponses answer sampleBatch: applied, newer record held, refused.
func sampleResponses() []node.Response {
	return []node.Response{
		{Status: 200, Header: node.Header{"X-Chronos-Start-Delta": "-3"}},
		{Status: 409, Header: node.Header{"X-Chronos-Version": "42"}, Body: []byte(`{"timing":{}}`)},
		{Status: 403, Header: node.Header{"Reason": "internal API: no signature"}, Body: []byte("internal API: no signature")},
	}
}

// TestBatchRoundTrip proves a batch and its response read back as written.
func TestBatchRoundTrip(t *testing.T) {
	reqs, err := parseBatchRequest(appendBatchRequest(nil, sampleBatch()))
	if err != nil || !reflect.DeepEqual(reqs, sampleBatch()) {
		t.Errorf("requests read back as %+v, %v; want %+v", reqs, err, sampleBatch())
	}
	resps, err := parseBatchResponse(appendBatchResponse(nil, sampleResponses()), 3)
	if err != nil || !reflect.DeepEqual(resps, sampleResponses()) {
		t.Errorf("responses read back as %+v, %v; want %+v", resps, err, sampleResponses())
	}
	for _, r := range sampleBatch() {
		one := appendBatchRequest(nil, []node.Request{r})
		if n := batchEntrySize(r); len(one)-len(batchRequestMagic)-2 > n {
			t.Errorf("%s %s takes %d bytes, more than its size bound %d", r.Method, r.URL, len(one), n)
		}
	}
}

// TestBatchReadsAsNetHTTP proves a sub-request reads as net/http's server
// would hand a lone one to the node: header names canonical, repeated
// names joined, the target as RequestURI gives it.
func TestBatchReadsAsNetHTTP(t *testing.T) {
	var b []byte
	b = append(b, batchRequestMagic...)
	b = append(b, batchVersion, 1)
	b = appendString(b, "PUT")
	b = appendString(b, "/timers/%7e?a=b")
	b = binary.AppendUvarint(b, 3)
	b = appendString(appendString(b, "x-chronos-signature"), "ab")
	b = appendString(appendString(b, "X-Multi"), "a")
	b = appendString(appendString(b, "x-multi"), "b")
	b = appendString(b, "")
	reqs, err := parseBatchRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	want := node.Request{Method: "PUT", URL: "/timers/%7e?a=b", Header: node.Header{"X-Chronos-Signature": "ab", "X-Multi": "a, b"}}
	if !reflect.DeepEqual(reqs[0], want) {
		t.Errorf("read %+v, want %+v", reqs[0], want)
	}
}

// TestBatchRefusesMalformed proves every malformed batch is refused whole
// with errBatch and a reason naming what is wrong.
func TestBatchRefusesMalformed(t *testing.T) {
	good := appendBatchRequest(nil, sampleBatch())
	entry := func(method, target string, header ...string) []byte {
		b := append([]byte(batchRequestMagic), batchVersion, 1)
		b = appendString(appendString(b, method), target)
		b = binary.AppendUvarint(b, uint64(len(header)/2))
		for _, s := range header {
			b = appendString(b, s)
		}
		return appendString(b, "")
	}
	tooMany := append([]byte(batchRequestMagic), batchVersion)
	tooMany = binary.AppendUvarint(tooMany, batchMaxRequests+1)
	manyHeaders := append([]byte(batchRequestMagic), batchVersion, 1)
	manyHeaders = appendString(appendString(manyHeaders, "PUT"), "/timers/x")
	manyHeaders = binary.AppendUvarint(manyHeaders, batchMaxHeaders+1)
	for _, tt := range []struct {
		name string
		body []byte
		want string
	}{
		{"empty", nil, `does not start with "CHBQ"`},
		{"JSON", []byte(`{"timers": []}`), `does not start with "CHBQ"`},
		{"a response", appendBatchResponse(nil, sampleResponses()), `does not start with "CHBQ"`},
		{"version 2", append([]byte(batchRequestMagic), 2, 1), "format version 2; this node reads version 1"},
		{"no entries", append([]byte(batchRequestMagic), batchVersion, 0), "no entries"},
		{"too many entries", tooMany, "count 65, more than 64"},
		{"count not a varint", append([]byte(batchRequestMagic), batchVersion, 0x80), "count: not a varint"},
		{"cut short", good[:len(good)-3], "past the end of the body"},
		{"entries missing", append([]byte(batchRequestMagic), batchVersion, 2), "entry 0: method length: not a varint"},
		{"bytes after", append(append([]byte(nil), good...), 0), "1 bytes after the last entry"},
		{"method not a token", entry("P T", "/timers/x"), `entry 0: method "P T" is not an HTTP token`},
		{"empty method", entry("", "/timers/x"), "is not an HTTP token"},
		{"absolute target", entry("PUT", "http://a/timers/x"), "is not a path and query"},
		{"target with space", entry("PUT", "/timers/a b"), "is not a path and query"},
		{"target with fragment", entry("PUT", "/timers/a#b"), "is not a path and query"},
		{"nested batch", entry("POST", BatchPath+"?x"), "a batch inside a batch"},
		{"header name", entry("PUT", "/t", "X Y", "v"), "header field name"},
		{"header value", entry("PUT", "/t", "X-Y", "a\r\nb"), "header field X-Y has a control character"},
		{"too many header fields", manyHeaders, "header field count 33, more than 32"},
	} {
		reqs, err := parseBatchRequest(tt.body)
		if !errors.Is(err, errBatch) || !strings.Contains(err.Error(), tt.want) || reqs != nil {
			t.Errorf("%s: got %v, %v; want errBatch with %q", tt.name, len(reqs), err, tt.want)
		}
	}
}

// TestBatchResponseRefusesMalformed proves the sender refuses a response
// that does not answer its batch: another count, a status out of range,
// a cut body.
func TestBatchResponseRefusesMalformed(t *testing.T) {
	good := appendBatchResponse(nil, sampleResponses())
	bad := appendBatchResponse(nil, []node.Response{{Status: 99}})
	for _, tt := range []struct {
		name string
		body []byte
		want int
		msg  string
	}{
		{"fewer", good, 4, "3 responses to 4 requests"},
		{"more", good, 2, "count 3, more than 2"},
		{"status", bad, 1, "status 99"},
		{"a request", appendBatchRequest(nil, sampleBatch()), 3, `does not start with "CHBA"`},
		{"cut", good[:len(good)-1], 3, "past the end"},
	} {
		if _, err := parseBatchResponse(tt.body, tt.want); !errors.Is(err, errBatch) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: err = %v, want errBatch with %q", tt.name, err, tt.msg)
		}
	}
}

// TestBatchBodiesAreCopies proves a sub-request's body does not share the
// batch's memory, so a body the node keeps holds only itself.
func TestBatchBodiesAreCopies(t *testing.T) {
	b := appendBatchRequest(nil, sampleBatch())
	reqs, err := parseBatchRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	if string(reqs[0].Body) != `{"timing":{}}` {
		t.Errorf("body after the batch was cleared: %q", reqs[0].Body)
	}
}

// TestFrameReaderCopiesNoKnownToken proves reading a field of a batch
// costs no allocation beyond the copies a request keeps: a length names
// itself only in an error, and a method or header field name that nodes
// send is not copied.
func TestFrameReaderCopiesNoKnownToken(t *testing.T) {
	frame := appendString(appendString(nil, http.MethodPut), node.HeaderSignature)
	allocs := testing.AllocsPerRun(10, func() {
		r := frameReader{b: frame}
		if m, k := r.token("method"), r.token("header field name"); m != http.MethodPut || k != node.HeaderSignature || r.err != nil {
			t.Fatalf("read %q %q (%v), want %q %q", m, k, r.err, http.MethodPut, node.HeaderSignature)
		}
	})
	if allocs != 0 {
		t.Errorf("reading a known method and header field name allocated %v times, want 0", allocs)
	}
}

// TestBatchEntriesShareEqualHeaderValues proves a value an entry's field
// shares with the same field of the entry before is not copied again, and
// that every entry still reads its own values.
func TestBatchEntriesShareEqualHeaderValues(t *testing.T) {
	hdr := func(sig string) node.Header {
		return node.Header{node.HeaderContentType: "application/json", node.HeaderTo: "127.0.0.1:7000", node.HeaderSignature: sig}
	}
	in := []node.Request{
		{Method: "PUT", URL: "/timers/a", Header: hdr("s1")},
		{Method: "PUT", URL: "/timers/b", Header: hdr("s2")},
		{Method: "PUT", URL: "/timers/c", Header: node.Header{node.HeaderTo: "127.0.0.1:7001", node.HeaderSignature: "s2"}},
	}
	got, err := parseBatchRequest(appendBatchRequest(nil, in))
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if !reflect.DeepEqual(got[i].Header, in[i].Header) {
			t.Errorf("entry %d: header %v, want %v", i, got[i].Header, in[i].Header)
		}
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if !same(got[0].Header[node.HeaderTo], got[1].Header[node.HeaderTo]) ||
		!same(got[0].Header[node.HeaderContentType], got[1].Header[node.HeaderContentType]) ||
		!same(got[1].Header[node.HeaderSignature], got[2].Header[node.HeaderSignature]) {
		t.Errorf("values equal to the entry before's were copied again")
	}
	if same(got[0].Header[node.HeaderSignature], got[1].Header[node.HeaderSignature]) {
		t.Errorf("entries with other values share one")
	}
}
