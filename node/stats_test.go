package node

import (
	"bytes"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// The node's counters (Stats) and log lines, which the production adapter
// turns into metrics and an operator reads.

// taggedJSON is a timer definition with statistics tags; repeatFor 0 is a
// one-shot.
func taggedJSON(interval, repeatFor int, uri, tags string) string {
	body := `{"timing":{"interval":` + strconv.Itoa(interval)
	if repeatFor > 0 {
		body += `,"repeat-for":` + strconv.Itoa(repeatFor)
	}
	return body + `},"callback":{"http":{"uri":"` + uri + `"}},"statistics":{"tag-info":[` + tags + `]}}`
}

// wantTags fails unless got holds exactly want: a tag counted 0 must not
// be listed at all, or a metric of it would stay behind.
func wantTags(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: tags %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: tags %v, want %v", what, got, want)
		}
	}
}

// TestTagCountsThroughFailures proves the per-tag counts follow a timer
// whose callbacks fail: a failed pop keeps a repeating timer and its tags;
// a timer whose pop failed stays live after its last pop, tags counted,
// until its life ends (docs/design.md 4.7), and then its tags leave with
// it.
func TestTagCountsThroughFailures(t *testing.T) {
	h := newHarness(t)
	rep, one := cb+"/repeating", cb+"/one-shot"
	h.create(taggedJSON(1, 3, rep, `{"type":"A","count":2}`))
	h.create(taggedJSON(1, 0, one, `{"type":"A"},{"type":"B","count":4}`))
	wantTags(t, "created", h.node.Stats().Tags, map[string]int{"A": 3, "B": 4})

	h.clock.advance(time.Second)
	if got := len(h.pops(rep, 500)) + len(h.pops(one, 0)); got != 2 {
		t.Fatalf("%d pops at the first due time, want 2", got)
	}
	for _, s := range h.net.take(one) {
		s.done(Response{}, errors.New("connection refused"))
	}
	st := h.node.Stats()
	wantTags(t, "after both callbacks failed", st.Tags, map[string]int{"A": 3, "B": 4})
	if st.Timers != 2 || st.CallbackFailures != 2 {
		t.Fatalf("after both callbacks failed: %d timers, %d failures; want 2, 2", st.Timers, st.CallbackFailures)
	}
	for range 2 {
		h.clock.advance(time.Second)
		h.pops(rep, 200)
	}
	// Both still know of a pop missed, which no replica made: they stay
	// live, tags counted, until their life ends.
	wantTags(t, "after the repeating timer's last pop", h.node.Stats().Tags, map[string]int{"A": 3, "B": 4})
	h.clock.advance(time.Minute)
	st = h.node.Stats()
	wantTags(t, "after the failed one-shot's life", st.Tags, map[string]int{})
	if st.Timers != 0 {
		t.Fatalf("%d timers left, want 0", st.Timers)
	}
}

// TestTagCountsOnEveryReplica proves each replica counts the tags of the
// timers it holds, and only those: a create counts on its replicas, an
// update through another node moves the counts to the new tags on each, a
// pop that finishes the timer (the primary's, told to the backup by its
// notice) and a delete leave none behind anywhere.
func TestTagCountsOnEveryReplica(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", taggedJSON(5, 0, cb, `{"type":"CALL","count":2}`))
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	replicas := NewRing(three).Replicas(mustID(t, wid), wire.DefaultReplicationFactor)
	want := func(what string, tags map[string]int) {
		t.Helper()
		for _, a := range three {
			w := map[string]int{}
			if a == replicas[0] || a == replicas[1] {
				w = tags
			}
			wantTags(t, what+" on "+a, c.nodes[a].Stats().Tags, w)
		}
	}
	want("created", map[string]int{"CALL": 2})
	if r := c.client(three[2], "PUT", "/timers/"+wid, taggedJSON(1, 0, cb, `{"type":"SUB"},{"type":"CALL","count":3}`)); r.Status != 200 {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	want("updated", map[string]int{"SUB": 1, "CALL": 3})
	if pops := c.advance(time.Second+100*time.Millisecond, 200); len(pops) != 1 {
		t.Fatalf("%d pops, want the primary's 1", len(pops))
	}
	want("popped", map[string]int{})

	r = c.client(three[1], "POST", "/timers", taggedJSON(60, 0, cb, `{"type":"X"}`))
	wid = strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	replicas = NewRing(three).Replicas(mustID(t, wid), wire.DefaultReplicationFactor)
	want("second created", map[string]int{"X": 1})
	if r := c.client(three[0], "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	want("deleted", map[string]int{})
}

// TestReplicationOutcomesCounted proves each internal PUT a node sends is
// counted once as sent and, by its answer, as failed (no answer), refused
// (an answer other than 2xx) or neither.
func TestReplicationOutcomesCounted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Address, c.Cluster = three[0], Membership{Nodes: three[:2]} })
	answers := []struct {
		resp                  Response
		err                   error
		sent, failed, refused uint64
	}{
		{err: errors.New("connection refused"), sent: 1, failed: 1},
		{resp: Response{Status: 409}, sent: 2, failed: 1, refused: 1},
		{resp: Response{Status: 403}, sent: 3, failed: 1, refused: 2},
		{resp: Response{Status: 200}, sent: 4, failed: 1, refused: 2},
	}
	for i, a := range answers {
		h.node.Handle(Request{Method: "POST", URL: "/timers", Header: Header{}, Body: []byte(timerJSON(60, 60, cb, "x"))}, func(Response) {})
		puts := h.net.take("http://" + three[1])
		if len(puts) != 1 {
			t.Fatalf("write %d: %d replication messages, want 1", i, len(puts))
		}
		puts[0].done(a.resp, a.err)
		h.net.take("http://") // retries and withdrawals: not answered, not counted
		st := h.node.Stats()
		if st.ReplicationsSent < a.sent || st.ReplicationsFailed != a.failed || st.ReplicationsRefused != a.refused {
			t.Fatalf("after answer %d: sent %d, failed %d, refused %d; want at least %d sent, %d failed, %d refused",
				i, st.ReplicationsSent, st.ReplicationsFailed, st.ReplicationsRefused, a.sent, a.failed, a.refused)
		}
	}
}

// TestShedIsCountedAndLoggedOncePerInterval proves every request refused
// at a limit is counted by that limit, while the log says so at most once
// per ShedLogInterval, the next line telling how many were refused since.
func TestShedIsCountedAndLoggedOncePerInterval(t *testing.T) {
	var logs bytes.Buffer
	h := newHarness(t, func(c *Config) {
		c.Limits.MaxTimers, c.Limits.MaxInFlight = 2, 1
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	h.create(timerJSON(0, 0, cb, "pops at once"))
	h.clock.advance(0)
	// Its callback is in flight and unanswered: the next write is shed
	// for want of a slot.
	if r := h.do("POST", "/timers", timerJSON(60, 60, cb, "x")); r.Status != 503 {
		t.Fatalf("write with a request in flight: %d, want 503", r.Status)
	}
	h.pops(cb, 200)
	h.create(timerJSON(60, 60, cb, "fills the store"))
	for range 3 {
		if r := h.do("POST", "/timers", timerJSON(60, 60, cb, "x")); r.Status != 503 {
			t.Fatalf("write to a full node: %d, want 503", r.Status)
		}
	}
	lines := regexp.MustCompile(`msg="load shed[^\n]*refused=(\d+)`).FindAllStringSubmatch(logs.String(), -1)
	if len(lines) != 1 || lines[0][1] != "1" {
		t.Fatalf("log lines about shed load %q, want one telling of 1 refused:\n%s", lines, logs.String())
	}
	h.clock.advance(max(ShedLogInterval, h.node.tombstoneMin()))
	h.create(timerJSON(60, 60, cb, "fills the store again")) // the first timer's tombstone has gone
	if r := h.do("PUT", "/timers/"+wire.FormatWireID(1<<40, 0), timerJSON(60, 60, cb, "x")); r.Status != 503 {
		t.Fatalf("update to a full node: %d, want 503", r.Status)
	}
	lines = regexp.MustCompile(`msg="load shed[^\n]*refused=(\d+)`).FindAllStringSubmatch(logs.String(), -1)
	if len(lines) != 2 || lines[1][1] != "4" {
		t.Fatalf("log lines about shed load %q, want a second telling of 4 refused:\n%s", lines, logs.String())
	}
	if st := h.node.Stats(); st.ShedInFlight != 1 || st.ShedTimers != 4 {
		t.Fatalf("shed %d in flight, %d timers; want 1, 4", st.ShedInFlight, st.ShedTimers)
	}
}

// lateClock fires every alarm late by delay, as a node held up (a pause,
// a busy process) would.
type lateClock struct {
	*manualClock
	delay time.Duration
}

func (c lateClock) AfterFunc(d time.Duration, f func()) Alarm {
	return c.manualClock.AfterFunc(d+c.delay, f)
}

// TestCallbackTellsItsLateness proves a callback carries how long after
// its due time the node sent it, for the driver's lateness metric, and
// that other requests carry none.
func TestCallbackTellsItsLateness(t *testing.T) {
	clk := &manualClock{now: epoch}
	h := newHarness(t, func(c *Config) { c.Clock = lateClock{clk, 300 * time.Millisecond} })
	h.clock = clk
	h.create(timerJSON(1, 1, cb, "late"))
	clk.advance(time.Second + 300*time.Millisecond)
	pops := h.pops(cb, 200)
	if len(pops) != 1 || pops[0].Late != 300*time.Millisecond {
		t.Fatalf("pops %+v, want one 300ms late", pops)
	}
	if got := h.node.Stats().PopLatenessMs; got != 300 {
		t.Fatalf("PopLatenessMs %d, want 300", got)
	}
}

// TestLogLinesNameTimersAsTheAPIDoes proves a log line names a timer by
// the ID its create answered with (32 hex digits, the replica bloom
// filter included), so that an operator finds a client's timer in it.
func TestLogLinesNameTimersAsTheAPIDoes(t *testing.T) {
	var logs bytes.Buffer
	h := newHarness(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	wid := h.create(timerJSON(1, 1, cb, "x"))
	h.clock.advance(time.Second)
	h.pops(cb, 500)
	if want := `msg="callback failed" node=127.0.0.1:7253 timer=` + wid; !strings.Contains(logs.String(), want) {
		t.Fatalf("log lacks %s:\n%s", want, logs.String())
	}
}

// TestResyncLogsEachStep proves a resync tells the log when it starts,
// when each peer is done or given up on, and how it finished: completed,
// or incomplete (a warning) with the peers it gave up on and its counts.
func TestResyncLogsEachStep(t *testing.T) {
	var logs bytes.Buffer
	c := newClusterWith(t, func(a string, cfg *Config) {
		if a == three[0] {
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		}
	}, three...)
	c.createMany(4, 2, 30, 30)
	c.nodes[three[0]].Resync(false)
	c.finishResyncs()
	for _, want := range []string{
		`msg="resync started"`,
		`msg="resync: peer done" node=` + three[0] + ` peer=` + three[1] + ` pages=1`,
		`msg="resync: peer done" node=` + three[0] + ` peer=` + three[2] + ` pages=1`,
		`level=INFO msg="resync finished" node=` + three[0] + ` state=completed`,
		`peers_done=3 failed_peers=[] received=`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	logs.Reset()
	c.down[three[2]] = true
	c.nodes[three[0]].Resync(false)
	c.finishResyncs()
	for _, want := range []string{
		`msg="resync: giving up on a peer" node=` + three[0] + ` peer=` + three[2] + ` attempts=8 pages=0 timers=0`,
		`level=WARN msg="resync finished" node=` + three[0] + ` state=incomplete`,
		`peers_done=2 failed_peers=[` + three[2] + `]`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}
