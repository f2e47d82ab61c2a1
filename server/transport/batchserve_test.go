package transport

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// postBatch serves a batch body through h and returns the recorded answer.
func postBatch(h http.Handler, body []byte) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, BatchPath, bytes.NewReader(body))
	req.Header.Set(node.HeaderContentType, batchContentType)
	h.ServeHTTP(rec, req)
	return rec
}

// TestBatchHandlerHandsEachToTheNode proves the inbound side: each
// sub-request reaches the node, in order and under the lock, as it was
// sent (method, target, header fields, body), and each reply, one of them
// given later from outside the batch's entry, comes back in its place.
func TestBatchHandlerHandsEachToTheNode(t *testing.T) {
	s := newNodeLock()
	later := make(chan func(node.Response), 1)
	core := &fakeCore{serial: s, t: t, respond: func(req node.Request, reply func(node.Response)) {
		switch req.Method {
		case http.MethodDelete:
			later <- reply
		case http.MethodPut:
			for i, r := range sampleBatch()[:2] {
				if req.URL == r.URL {
					reply(sampleResponses()[i])
				}
			}
		}
	}}
	go func() {
		reply := <-later
		s.Do(func() { reply(sampleResponses()[2]) })
	}()
	rec := postBatch(NewHandler(core, s.Do, chantest.Timeout, nil), appendBatchRequest(nil, sampleBatch()))
	if rec.Code != http.StatusOK || rec.Header().Get(node.HeaderContentType) != batchContentType {
		t.Fatalf("answer %d %q %q, want 200 of %s", rec.Code, rec.Header().Get(node.HeaderContentType), rec.Body, batchContentType)
	}
	want := sampleBatch()
	for i := range want {
		want[i].Remote = "192.0.2.1:1234" // the batch's connection's, as httptest gives it
	}
	if got := core.requests(); !reflect.DeepEqual(got, want) {
		t.Errorf("node got %+v, want %+v", got, want)
	}
	resps, err := parseBatchResponse(rec.Body.Bytes(), 3)
	if err != nil || !reflect.DeepEqual(resps, sampleResponses()) {
		t.Errorf("responses %+v, %v; want %+v", resps, err, sampleResponses())
	}
}

// TestBatchHandlerRefusesMalformed proves a malformed batch is answered
// 400 with its reason, a batch too large 413, another method 405, and
// that none of them reaches the node.
func TestBatchHandlerRefusesMalformed(t *testing.T) {
	s := newNodeLock()
	core := &fakeCore{serial: s, t: t, respond: func(_ node.Request, reply func(node.Response)) { reply(node.Response{Status: 200}) }}
	h := NewHandler(core, s.Do, chantest.Timeout, nil)
	good := appendBatchRequest(nil, sampleBatch())
	nested := appendBatchRequest(nil, append(sampleBatch(), node.Request{Method: "POST", URL: BatchPath}))
	for _, tt := range []struct {
		name   string
		body   []byte
		status int
		reason string
	}{
		{"JSON", []byte(`{"timers":[]}`), 400, `malformed batch: the body does not start with "CHBQ"`},
		{"version", append([]byte(batchRequestMagic), 9, 1), 400, "format version 9; this node reads version 1"},
		{"cut", good[:len(good)-1], 400, "entry 2: body length: not a varint"},
		{"nested", nested, 400, "entry 3: a batch inside a batch"},
		{"too large", make([]byte, batchMaxBytes+1), 413, "batch body larger than 1048576 bytes"},
	} {
		rec := postBatch(h, tt.body)
		if rec.Code != tt.status || !strings.Contains(rec.Header().Get(wire.HeaderReason), tt.reason) || !strings.Contains(rec.Body.String(), tt.reason) {
			t.Errorf("%s: answer %d Reason %q, want %d with %q", tt.name, rec.Code, rec.Header().Get(wire.HeaderReason), tt.status, tt.reason)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, BatchPath, nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodPost {
		t.Errorf("GET: answer %d Allow %q, want 405 allowing POST", rec.Code, rec.Header().Get("Allow"))
	}
	if got := core.requests(); len(got) != 0 {
		t.Errorf("the node got %d requests of refused batches, want none", len(got))
	}
}

// TestBatchHandlerNoReply proves a sub-request the node does not answer
// in time gets, inside a batch answered 200, the 503 with Retry-After a
// lone request gets, while the others get their replies; and that the
// node's reply after that is dropped.
func TestBatchHandlerNoReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newNodeLock()
		var kept func(node.Response)
		core := &fakeCore{serial: s, t: t, respond: func(req node.Request, reply func(node.Response)) {
			if req.Method == http.MethodDelete {
				kept = reply
				return
			}
			reply(node.Response{Status: http.StatusOK})
		}}
		rec := postBatch(NewHandler(core, s.Do, 2*time.Second, nil), appendBatchRequest(nil, sampleBatch()))
		resps, err := parseBatchResponse(rec.Body.Bytes(), 3)
		if rec.Code != http.StatusOK || err != nil {
			t.Fatalf("answer %d, %v; want 200 with 3 responses", rec.Code, err)
		}
		if resps[0].Status != 200 || resps[1].Status != 200 {
			t.Errorf("answered sub-requests: %d %d, want 200 200", resps[0].Status, resps[1].Status)
		}
		if r := resps[2]; r.Status != 503 || r.Header.Get(wire.HeaderRetryAfter) != "1" || r.Header.Get(wire.HeaderReason) != "no reply within 2s" {
			t.Errorf("unanswered sub-request: %d %v, want 503 with Retry-After and the reason", r.Status, r.Header)
		}
		s.Do(func() { kept(node.Response{Status: http.StatusOK}) })
	})
}

// TestBatchHandlerStoppedNode proves a batch to a stopping node is
// answered 503 whole, so the sender fails each of its requests.
func TestBatchHandlerStoppedNode(t *testing.T) {
	s := newNodeLock()
	s.Close()
	core := &fakeCore{serial: s, t: t, respond: func(node.Request, func(node.Response)) { t.Error("stopped node entered") }}
	rec := postBatch(NewHandler(core, s.Do, chantest.Timeout, nil), appendBatchRequest(nil, sampleBatch()))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get(wire.HeaderRetryAfter) == "" {
		t.Errorf("answer %d, want 503 with Retry-After", rec.Code)
	}
}

// TestBatchHandlerKeepsNothingOfItsBuffers proves what the node is handed
// from a batch, and what the peer is answered, are the batch's own after
// the pooled buffers they were read from and written into serve the next
// batch of the same size.
func TestBatchHandlerKeepsNothingOfItsBuffers(t *testing.T) {
	s := newNodeLock()
	core := &fakeCore{serial: s, t: t, respond: func(req node.Request, reply func(node.Response)) {
		reply(node.Response{Status: 200, Header: node.Header{"X-Got": req.Header.Get(node.HeaderSignature)}, Body: req.Body})
	}}
	h := NewHandler(core, s.Do, chantest.Timeout, nil)
	batch := func(x string) []node.Request {
		return []node.Request{
			{Method: http.MethodPut, URL: "/timers/" + x + "1", Header: node.Header{node.HeaderSignature: "sig " + x + "1"}, Body: []byte("body " + x + "1")},
			{Method: http.MethodPut, URL: "/timers/" + x + "2", Header: node.Header{node.HeaderSignature: "sig " + x + "2"}, Body: []byte("body " + x + "2")},
		}
	}
	var answers []string
	for _, x := range []string{"a", "b", "c"} {
		rec := postBatch(h, appendBatchRequest(nil, batch(x)))
		if rec.Code != http.StatusOK {
			t.Fatalf("batch %s: %d %q", x, rec.Code, rec.Body)
		}
		answers = append(answers, rec.Body.String())
	}
	got := core.requests()
	for i, x := range []string{"a", "b", "c"} {
		for j, want := range batch(x) {
			want.Remote = "192.0.2.1:1234"
			if !reflect.DeepEqual(got[2*i+j], want) {
				t.Errorf("batch %s, entry %d: node holds %+v, want %+v", x, j, got[2*i+j], want)
			}
		}
		resps, err := parseBatchResponse([]byte(answers[i]), 2)
		if err != nil || string(resps[0].Body) != "body "+x+"1" || resps[1].Header.Get("X-Got") != "sig "+x+"2" {
			t.Errorf("batch %s: answered %+v (%v), want its own", x, resps, err)
		}
	}
}
