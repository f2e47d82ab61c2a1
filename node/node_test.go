package node

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

const cb = "http://client.example/cb"

// seqs returns the X-Sequence-Number and body of each callback.
func seqs(reqs []Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Header.Get(wire.HeaderSequenceNumber)+":"+string(r.Body))
	}
	return out
}

func wantPops(t *testing.T, got []Request, want ...string) {
	t.Helper()
	if fmt.Sprint(seqs(got)) != fmt.Sprint(want) {
		t.Fatalf("pops: got %v, want %v", seqs(got), want)
	}
}

// TestPopsOncePerIntervalUntilRepeatFor proves a repeating timer pops at
// start + k*interval, never early, with X-Sequence-Number k and the opaque
// body, stops after repeat-for, and leaves a tombstone for one interval.
func TestPopsOncePerIntervalUntilRepeatFor(t *testing.T) {
	h := newHarness(t)
	h.create(timerJSON(1, 3, cb, "hello"))
	for k := 1; k <= 3; k++ {
		h.clock.advance(999 * time.Millisecond)
		wantPops(t, h.pops(cb, 200))
		h.clock.advance(time.Millisecond)
		wantPops(t, h.pops(cb, 200), strconv.Itoa(k)+":hello")
	}
	h.clock.advance(h.node.tombstoneMin())
	wantPops(t, h.pops(cb, 200))
	if s := h.node.Stats(); s.Timers != 0 || s.Tombstones != 0 || s.Pops != 3 {
		t.Errorf("stats: got %d timers, %d tombstones, %d pops; want 0, 0, 3", s.Timers, s.Tombstones, s.Pops)
	}
}

// TestPopNamesItsTimer proves a callback carries the timer's unique ID,
// as the first 16 hex digits of the ID the create answered with.
func TestPopNamesItsTimer(t *testing.T) {
	h := newHarness(t)
	id := h.create(timerJSON(1, 2, cb, "named"))
	for range 2 {
		h.clock.advance(time.Second)
		got := h.pops(cb, 200)
		if len(got) != 1 || got[0].Header.Get(wire.HeaderTimerID) != id[:16] {
			t.Fatalf("pops: got %v, want one carrying %s %s", got, wire.HeaderTimerID, id[:16])
		}
	}
}

// TestOneShotAndEdgeTimings proves the timing rules of api.md: no
// repeat-for pops once; repeat-for equal to the interval pops once;
// repeat-for below the interval never fires; interval 0 pops once at once.
func TestOneShotAndEdgeTimings(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		after time.Duration
		want  []string
	}{
		{"no repeat-for", `{"timing":{"interval":2},"callback":{"http":{"uri":"` + cb + `","opaque":"a"}}}`, 2 * time.Second, []string{"1:a"}},
		{"repeat-for equal", timerJSON(2, 2, cb, "b"), 2 * time.Second, []string{"1:b"}},
		{"repeat-for below", timerJSON(2, 1, cb, "c"), 0, nil},
		{"repeat-for not a multiple", timerJSON(2, 5, cb, "d"), 4 * time.Second, []string{"1:d", "2:d"}},
		{"interval zero", timerJSON(0, 0, cb, "e"), 0, []string{"1:e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.create(tc.body)
			if tc.after > 0 {
				h.clock.advance(tc.after - time.Millisecond)
			}
			h.clock.advance(time.Millisecond)
			var got []Request
			got = append(got, h.pops(cb, 200)...)
			h.clock.advance(time.Hour)
			got = append(got, h.pops(cb, 200)...)
			if fmt.Sprint(seqs(got)) != fmt.Sprint(tc.want) {
				t.Fatalf("pops: got %v, want %v", seqs(got), tc.want)
			}
		})
	}
}

// TestUpdateRedefinesTimer proves a PUT replaces the definition: the next
// pop follows the new interval from the time of the update, with the new
// opaque and the sequence restarted at 1, and the Location keeps the ID.
func TestUpdateRedefinesTimer(t *testing.T) {
	h := newHarness(t)
	id := h.create(timerJSON(10, 10, cb, "old"))
	h.clock.advance(5 * time.Second)
	r := h.do("PUT", "/timers/"+id, timerJSON(2, 4, cb, "new"))
	if r.Status != 200 || r.Header.Get(wire.HeaderLocation) != "/timers/"+id {
		t.Fatalf("PUT: got %d %q, want 200 /timers/%s", r.Status, r.Header.Get(wire.HeaderLocation), id)
	}
	h.clock.advance(2 * time.Second)
	wantPops(t, h.pops(cb, 200), "1:new")
	h.clock.advance(10 * time.Second)
	wantPops(t, h.pops(cb, 200), "2:new")
}

// TestPutUnknownIDCreates proves a PUT to an ID the node does not hold
// creates the timer under that ID (api.md).
func TestPutUnknownIDCreates(t *testing.T) {
	h := newHarness(t)
	id := wire.FormatWireID(12345, 0)
	r := h.do("PUT", "/timers/"+id, timerJSON(1, 1, cb, "chosen"))
	if r.Status != 200 {
		t.Fatalf("PUT: got %d (%s), want 200", r.Status, r.Body)
	}
	h.clock.advance(time.Second)
	wantPops(t, h.pops(cb, 200), "1:chosen")
}

// TestDeleteSticks proves a DELETE stops every later pop, answers 200, is
// idempotent, and that a stale replication of the deleted definition
// cannot bring the timer back while the tombstone lives (it is answered
// 409 with the tombstone).
func TestDeleteSticks(t *testing.T) {
	h := newHarness(t)
	id := h.create(timerJSON(1, 10, cb, "x"))
	h.clock.advance(time.Second)
	wantPops(t, h.pops(cb, 200), "1:x")
	held, _ := h.node.Timer(mustID(t, id))
	for range 2 {
		if r := h.do("DELETE", "/timers/"+id, ""); r.Status != 200 {
			t.Fatalf("DELETE: got %d, want 200", r.Status)
		}
	}
	stale := held
	stale.Seq = 0
	r := h.do("PUT", "/timers/"+id, string(EncodeReplication(&stale, h.node.nowMs())))
	if r.Status != 409 || r.Header.Get(HeaderVersion) == "" {
		t.Fatalf("stale replication: got %d, want 409 with the newer version", r.Status)
	}
	h.clock.advance(time.Minute)
	wantPops(t, h.pops(cb, 200))
	if s := h.node.Stats(); s.Timers != 0 {
		t.Errorf("stats: got %d live timers after delete, want 0", s.Timers)
	}
}

// TestCallbackFailureCostsOnlyThatPop proves that with replication
// factor 1 a failed callback (non-2xx or error) costs that pop and no
// more: the copy keeps its schedule and pops the next interval, and the
// failed pop is not tried again (docs/design.md 4.7).
func TestCallbackFailureCostsOnlyThatPop(t *testing.T) {
	for _, status := range []int{500, 404, 0} {
		h := newHarness(t)
		h.create(timerJSON(1, 3, cb, "x"))
		h.clock.advance(time.Second)
		for _, s := range h.net.take(cb) {
			if status == 0 {
				s.done(Response{}, fmt.Errorf("timeout"))
			} else {
				s.done(Response{Status: status}, nil)
			}
		}
		if st := h.node.Stats(); st.Timers != 1 || st.CallbackFailures != 1 {
			t.Errorf("after a %d: got %d timers, %d failures; want 1, 1", status, st.Timers, st.CallbackFailures)
		}
		h.clock.advance(time.Second)
		wantPops(t, h.pops(cb, 200), "2:x")
		h.clock.advance(time.Minute)
		wantPops(t, h.pops(cb, 200), "3:x")
	}
}

// TestTagCounts proves per-tag counts follow create, update, pop and
// delete (api.md statistics).
func TestTagCounts(t *testing.T) {
	h := newHarness(t)
	tagged := func(interval int, tags string) string {
		return `{"timing":{"interval":` + strconv.Itoa(interval) + `},"callback":{"http":{"uri":"` + cb +
			`"}},"statistics":{"tag-info":[` + tags + `]}}`
	}
	a := h.create(tagged(10, `{"type":"CALL","count":2},{"type":"SUB"}`))
	h.create(tagged(1, `{"type":"CALL"}`))
	want := func(call, sub int) {
		t.Helper()
		got := h.node.Stats().Tags
		if got["CALL"] != call || got["SUB"] != sub {
			t.Fatalf("tags: got %v, want CALL=%d SUB=%d", got, call, sub)
		}
	}
	want(3, 1)
	h.clock.advance(time.Second)
	h.pops(cb, 200)
	want(2, 1)
	h.do("PUT", "/timers/"+a, tagged(10, `{"type":"SUB","count":5}`))
	want(0, 5)
	h.do("DELETE", "/timers/"+a, "")
	want(0, 0)
}

// TestReplicationFactorCannotChange proves a PUT cannot change the
// replication factor of a timer (docs/design.md 4.6).
func TestReplicationFactorCannotChange(t *testing.T) {
	h := newHarness(t)
	id := h.create(`{"timing":{"interval":5},` + okCallback + `,"reliability":{"replication-factor":2}}`)
	r := h.do("PUT", "/timers/"+id, `{"timing":{"interval":5},`+okCallback+`,"reliability":{"replication-factor":3}}`)
	if r.Status != 400 {
		t.Fatalf("PUT with a new replication factor: got %d, want 400", r.Status)
	}
	if r := h.do("PUT", "/timers/"+id, `{"timing":{"interval":5},`+okCallback+`}`); r.Status != 200 {
		t.Fatalf("PUT without one: got %d, want 200", r.Status)
	}
}

// TestOverloadAnswers503 proves a node at its timer limit refuses new
// timers with 503 and Retry-After instead of growing without bound.
func TestOverloadAnswers503(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.MaxTimers = 2 })
	h.create(timerJSON(5, 5, cb, "a"))
	h.create(timerJSON(5, 5, cb, "b"))
	r := h.do("POST", "/timers", timerJSON(5, 5, cb, "c"))
	if r.Status != 503 || r.Header.Get(wire.HeaderRetryAfter) == "" {
		t.Fatalf("third timer: got %d Retry-After %q, want 503 with Retry-After", r.Status, r.Header.Get(wire.HeaderRetryAfter))
	}
}

// TestFullNodeRefusesADeleteItCannotHold proves a node at its timer limit
// answers a delete of a timer it holds nothing of with 503, as it would
// a create: the tombstone is the only record of the delete, and a 200
// would acknowledge it held nowhere (scenarios/README.md N69: a full
// site acknowledged a delete of a timer it had missed, and another
// site's replica popped it on). A delete of a timer it holds is taken.
func TestFullNodeRefusesADeleteItCannotHold(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.MaxTimers = 2 })
	held := h.create(timerJSON(5, 5, cb, "a"))
	h.create(timerJSON(5, 5, cb, "b"))
	o := newHarness(t)
	o.clock.advance(time.Hour) // another ID than h's
	other := o.create(timerJSON(5, 5, cb, "c"))
	r := h.do("DELETE", "/timers/"+other, "")
	if r.Status != 503 || r.Header.Get(wire.HeaderRetryAfter) == "" {
		t.Fatalf("delete of a timer the full node holds nothing of: got %d %q, want 503 with Retry-After", r.Status, r.Body)
	}
	if r := h.do("DELETE", "/timers/"+held, ""); r.Status != 200 {
		t.Fatalf("delete of a held timer on the full node: got %d %q, want 200", r.Status, r.Body)
	}
}

// TestClockJumpBackNeverPopsEarly proves a node whose clock steps back
// does not pop a timer before its due time on the new clock.
func TestClockJumpBackNeverPopsEarly(t *testing.T) {
	h := newHarness(t)
	h.clock.advance(time.Hour)
	h.clock.now = h.clock.now.Add(-30 * time.Minute)
	h.create(timerJSON(60, 60, cb, "x"))
	h.clock.advance(59 * time.Second)
	wantPops(t, h.pops(cb, 200))
	h.clock.advance(time.Second)
	wantPops(t, h.pops(cb, 200), "1:x")
}

func mustID(t testing.TB, wid string) uint64 {
	t.Helper()
	id, _, err := wire.ParseWireID(wid)
	if err != nil {
		t.Fatalf("ParseWireID(%q): %v", wid, err)
	}
	return id
}

// TestNeverEarlyBySubMillisecond proves a pop is never sent before the
// request's arrival + interval on the node's clock, by any fraction of a
// millisecond: a timer created 0.4 ms into a millisecond does not pop at
// the whole millisecond one interval later, which would be 0.4 ms early.
func TestNeverEarlyBySubMillisecond(t *testing.T) {
	h := newHarness(t)
	h.clock.advance(400 * time.Microsecond)
	h.create(timerJSON(1, 1, cb, "x"))
	h.clock.advance(time.Second - time.Microsecond)
	if got := h.pops(cb, 200); len(got) != 0 {
		t.Fatalf("pops by arrival + 1 s - 1 µs: got %v, want none", seqs(got))
	}
	h.clock.advance(time.Millisecond)
	if got := seqs(h.pops(cb, 200)); len(got) != 1 {
		t.Fatalf("pops by arrival + 1.001 s: got %v, want one", got)
	}
}
