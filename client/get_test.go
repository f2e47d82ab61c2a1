package client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

// getAnswer is a GET /timers/<id> answer in the node's format
// (docs/api.md), with a member a later node might add.
const getAnswer = `{"id":"ABCDEF0123456789000000000000F00F",
 "timer":{"timing":{"interval":2,"repeat-for":10},"callback":{"http":{"uri":"http://127.0.0.1:9/cb","opaque":"hi"}},
          "reliability":{"replication-factor":2},"statistics":{"tag-info":[{"type":"CALL","count":1}]}},
 "sequence-number":3,"next-pop":"2026-03-01T12:00:08Z",
 "replicas":[{"node":"127.0.0.1:7001","state":"live","version":"7","sequence-number":3,"next-pop":"2026-03-01T12:00:08.000Z"},
             {"node":"127.0.0.1:7002","state":"moved","version":"7"},
             {"node":"127.0.0.1:7003","state":"unreachable"}],
 "future-member":true}`

// TestGet proves that Get decodes the node's answer (the definition, the
// progress, and each replica's state, a missing next-pop as zero), asks
// for the ID it was given, and that 404 matches ErrNotFound without a
// retry while 503 is retried on each node and matches ErrUnavailable.
func TestGet(t *testing.T) {
	var status atomic.Int32
	var requests atomic.Int32
	var path atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		path.Store(r.Method + " " + r.URL.Path)
		switch s := int(status.Load()); s {
		case http.StatusOK:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(getAnswer))
		default:
			w.Header().Set("Reason", "no replica holds the timer")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(s)
		}
	}))
	defer srv.Close()
	other := httptest.NewServer(srv.Config.Handler)
	defer other.Close()
	c, err := New([]string{srv.URL, other.URL}, WithBackoff(0, 0))
	if err != nil {
		t.Fatal(err)
	}

	status.Store(http.StatusOK)
	info, err := c.Get(t.Context(), "abcdef0123456789000000000000f00f")
	if err != nil {
		t.Fatal(err)
	}
	if got := path.Load(); got != "GET /timers/abcdef0123456789000000000000f00f" {
		t.Errorf("request %v, want GET /timers/<id>", got)
	}
	next := time.Date(2026, 3, 1, 12, 0, 8, 0, time.UTC)
	want := TimerInfo{
		ID: "abcdef0123456789000000000000f00f",
		Timer: Timer{Interval: 2 * time.Second, RepeatFor: 10 * time.Second, URI: "http://127.0.0.1:9/cb", Opaque: "hi",
			ReplicationFactor: 2, Tags: []Tag{{Type: "CALL", Count: 1}}},
		SequenceNumber: 3, NextPop: next,
		Replicas: []ReplicaInfo{
			{Node: "127.0.0.1:7001", State: StateLive, Version: "7", SequenceNumber: 3, NextPop: next},
			{Node: "127.0.0.1:7002", State: StateMoved, Version: "7"},
			{Node: "127.0.0.1:7003", State: StateUnreachable},
		},
	}
	if !reflect.DeepEqual(*info, want) {
		t.Errorf("Get = %+v\nwant %+v", *info, want)
	}

	requests.Store(0)
	status.Store(http.StatusNotFound)
	_, err = c.Get(t.Context(), "abcdef0123456789000000000000f00f")
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrAllNodesFailed) || requests.Load() != 1 {
		t.Errorf("Get of a timer no replica holds = %v after %d requests, want ErrNotFound after 1", err, requests.Load())
	}

	requests.Store(0)
	status.Store(http.StatusServiceUnavailable)
	_, err = c.Get(t.Context(), "abcdef0123456789000000000000f00f")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrAllNodesFailed) || requests.Load() != 4 {
		t.Errorf("Get with no replica answering = %v after %d requests, want ErrUnavailable after 4 (2 nodes, 2 rounds)", err, requests.Load())
	}
}

// TestGetRefusesMalformedAnswers proves that a 200 whose body is not the
// node's format is an error naming the node, never a zero TimerInfo.
func TestGetRefusesMalformedAnswers(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"id":"nothex"}`, `{"id":"abcdef0123456789000000000000f00f","timer":{"timing":{}}}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
		c, err := New([]string{srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if info, err := c.Get(t.Context(), "abcdef0123456789000000000000f00f"); err == nil {
			t.Errorf("Get of answer %q = %+v, want an error", body, info)
		}
		srv.Close()
	}
}
