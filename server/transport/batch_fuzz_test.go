package transport

import (
	"errors"
	"reflect"
	"testing"

	"github.com/chronos-timer/chronos/node"
)

// FuzzParseBatchRequest proves that no body, however malformed, panics the
// parser of batch requests or makes it allocate beyond its bounds: what it
// refuses is errBatch and nothing else; what it accepts holds 1 to
// batchMaxRequests entries, each one a lone request could be (a method,
// a target in origin form that is not BatchPath), whose bytes add up to no
// more than the body's (three times, for targets that net/http escapes);
// and written again it reads back the same. The corpus lives under
// testdata/fuzz/FuzzParseBatchRequest.
func FuzzParseBatchRequest(f *testing.F) {
	f.Add(appendBatchRequest(nil, sampleBatch()))
	f.Add(appendBatchRequest(nil, sampleBatch()[:1]))
	f.Add(appendBatchRequest(nil, []node.Request{{Method: "GET", URL: "/ä?b=%zz", Header: node.Header{"a": "1"}}}))
	f.Add(appendBatchResponse(nil, sampleResponses()))
	f.Add([]byte(batchRequestMagic + "\x01\x40"))
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, err := parseBatchRequest(data)
		if err != nil {
			if reqs != nil || !errors.Is(err, errBatch) {
				t.Fatalf("refused with %d requests and error %v, want none and errBatch", len(reqs), err)
			}
			return
		}
		if len(reqs) < 1 || len(reqs) > batchMaxRequests {
			t.Fatalf("accepted %d requests, want 1 to %d", len(reqs), batchMaxRequests)
		}
		size, maxTarget := 0, 0
		for _, r := range reqs {
			if !isToken([]byte(r.Method)) || len(r.URL) == 0 || r.URL[0] != '/' || r.URL == BatchPath {
				t.Fatalf("accepted %q %q", r.Method, r.URL)
			}
			size += len(r.Method) + len(r.URL) + len(r.Body)
			for k, v := range r.Header {
				size += len(k) + len(v)
			}
			maxTarget = max(maxTarget, len(r.URL))
		}
		if size > 3*len(data) {
			t.Fatalf("read %d bytes from a body of %d", size, len(data))
		}
		if maxTarget > batchMaxHeadBytes/3 {
			return // escaped, a target may outgrow what a batch may carry
		}
		again, err := parseBatchRequest(appendBatchRequest(nil, reqs))
		if err != nil || !reflect.DeepEqual(again, reqs) {
			t.Fatalf("written again, read back as %+v, %v; want %+v", again, err, reqs)
		}
	})
}

// FuzzParseBatchResponse proves the same of the sender's parser of batch
// responses, against the number of requests it sent: it never panics,
// refuses with errBatch only, accepts exactly that many responses of a
// valid status whose bytes add up to no more than the body's, and reads
// back what it would write. The corpus lives under
// testdata/fuzz/FuzzParseBatchResponse.
func FuzzParseBatchResponse(f *testing.F) {
	f.Add(appendBatchResponse(nil, sampleResponses()), uint8(3))
	f.Add(appendBatchResponse(nil, sampleResponses()[:1]), uint8(1))
	f.Add(appendBatchRequest(nil, sampleBatch()), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, want uint8) {
		n := int(want)%batchMaxRequests + 1
		resps, err := parseBatchResponse(data, n)
		if err != nil {
			if resps != nil || !errors.Is(err, errBatch) {
				t.Fatalf("refused with %d responses and error %v, want none and errBatch", len(resps), err)
			}
			return
		}
		if len(resps) != n {
			t.Fatalf("accepted %d responses to %d requests", len(resps), n)
		}
		size := 0
		for _, r := range resps {
			if r.Status < 100 || r.Status > 999 {
				t.Fatalf("accepted status %d", r.Status)
			}
			size += len(r.Body)
			for k, v := range r.Header {
				size += len(k) + len(v)
			}
		}
		if size > len(data) {
			t.Fatalf("read %d bytes from a body of %d", size, len(data))
		}
		again, err := parseBatchResponse(appendBatchResponse(nil, resps), n)
		if err != nil || !reflect.DeepEqual(again, resps) {
			t.Fatalf("written again, read back as %+v, %v; want %+v", again, err, resps)
		}
	})
}
