package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// TestSinkCountsEachTimerSeqPair proves the sink accounts per (timer,
// X-Sequence-Number): a pair never delivered is lost, a pair delivered
// twice is duplicated once with one extra pop, a pop arriving before its
// own due time (create + k × interval) is early while pop 1 of the same
// timer is not, and sequence numbers beyond -pops or missing are stray,
// not counted against any pair. The handler is called directly; arrival
// times are far from the bounds (hours), so nothing depends on timing.
func TestSinkCountsEachTimerSeqPair(t *testing.T) {
	const timers, pops = 3, 3
	sk := newSink(timers, pops, 0, 0)
	deliver := func(body, seq string) {
		req := httptest.NewRequest(http.MethodPost, "/cb", strings.NewReader(body))
		if seq != "" {
			req.Header.Set(wire.HeaderSequenceNumber, seq)
		}
		rec := httptest.NewRecorder()
		sk.serve(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s seq %q: answered %d, want 200", body, seq, rec.Code)
		}
	}
	// Timer 0: all three pops once. Timer 1: pop 2 twice, pop 3 never.
	// Timer 2: pops 1 and 2 only; its pop 2 arrives early (below).
	for _, p := range []struct{ body, seq string }{
		{"l0", "1"}, {"l0", "2"}, {"l0", "3"},
		{"l1", "1"}, {"l1", "2"}, {"l1", "2"},
		{"l2", "1"}, {"l2", "2"},
		{"l0", "4"}, {"l1", ""}, {"b7", "1"}, // stray, stray, baseline
	} {
		deliver(p.body, p.seq)
	}
	now := time.Now()
	recs := make([]timerRec, timers)
	for i := range recs {
		// Pop k is due an hour × k after a create made 10 hours ago.
		recs[i] = timerRec{sent: now.Add(-10 * time.Hour), answered: now.Add(-10 * time.Hour), interval: time.Hour, status: http.StatusOK}
	}
	// Timer 2 was created 90 minutes ago: pop 1 (due 30 minutes ago) is
	// on time, pop 2 (due in 30 minutes) is early, pop 3 is lost.
	recs[2].sent, recs[2].answered = now.Add(-90*time.Minute), now.Add(-90*time.Minute)
	var r report
	r.measurePops(recs, sk)
	if r.lost != 2 || r.duplicated != 1 || r.extraPops != 1 || r.early != 1 || r.stray != 2 {
		t.Errorf("lost %d, duplicated %d (%d extra), early %d, stray %d: want 2, 1 (1), 1, 2",
			r.lost, r.duplicated, r.extraPops, r.early, r.stray)
	}
	if len(r.lateness) != timers*pops-2 || sk.popped() != timers*pops-2 {
		t.Errorf("%d lateness samples, %d pairs popped: want %d each", len(r.lateness), sk.popped(), timers*pops-2)
	}
}

// TestOptionsRefuseBadPopFlags proves the repeating-timer and slow-sink
// flags are checked before anything starts: -pops below 1 or with more
// than 10M (timer, seq) counters, a slow sink given half its flags, and
// either with -hold, whose timers never pop.
func TestOptionsRefuseBadPopFlags(t *testing.T) {
	base := options{nodes: 1, rf: 1, timers: 10, window: time.Second, concurrency: 1, pops: 1}
	ok := base
	ok.pops, ok.sinkWorkers, ok.sinkService = 3, 8, 20*time.Millisecond
	if err := ok.check(); err != nil {
		t.Fatalf("-pops 3 -sink-workers 8 -sink-service 20ms: got %v, want accepted", err)
	}
	for name, mutate := range map[string]func(*options){
		"no pops":           func(o *options) { o.pops = 0 },
		"too many counters": func(o *options) { o.timers, o.pops = 5_000_000, 3 },
		"workers only":      func(o *options) { o.sinkWorkers = 8 },
		"service only":      func(o *options) { o.sinkService = time.Millisecond },
		"negative workers":  func(o *options) { o.sinkWorkers, o.sinkService = -1, time.Millisecond },
		"pops with hold":    func(o *options) { o.hold, o.pops = true, 2 },
		"sink with hold":    func(o *options) { o.hold, o.sinkWorkers, o.sinkService = true, 1, time.Millisecond },
	} {
		o := base
		mutate(&o)
		if err := o.check(); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

// TestSlowSinkDropsAbandonedPops proves a slow sink does not count a pop
// whose caller gave up while it waited (the node's deadline ran out): it
// is counted as dropped, not as arrived. The request's context is already
// done, so the handler returns without serving the hour-long service.
func TestSlowSinkDropsAbandonedPops(t *testing.T) {
	sk := newSink(1, 1, 1, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/cb", strings.NewReader("l0"))
	req.Header.Set(wire.HeaderSequenceNumber, "1")
	sk.serve(httptest.NewRecorder(), req)
	if sk.popped() != 0 || sk.dropped.Load() != 1 {
		t.Errorf("popped %d, dropped %d: want 0 and 1", sk.popped(), sk.dropped.Load())
	}
}
