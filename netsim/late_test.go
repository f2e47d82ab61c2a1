package netsim

import (
	"errors"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// TestHeldLinkDeliversAtTheHealLongAfterTheSenderGaveUp proves a held
// link keeps what is sent on it, the sender times out as across a
// partition, and the heal, 30 s later, delivers it: the receiver serves
// it then, told it was sent at 0, and the tracer names it "late" with its
// age.
func TestHeldLinkDeliversAtTheHealLongAfterTheSenderGaveUp(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 1)
	a := n.Listen("a", nil, true)
	var served, sent []time.Duration
	n.Listen("b", func(_ string, at time.Duration, _ node.Request, reply func(node.Response)) {
		served, sent = append(served, l.Now()), append(sent, at)
		reply(node.Response{Status: 200})
	}, true)
	var ages []int64
	n.SetTracer(func(what, _, _ string, _ *node.Request, d int64) {
		if what == "late" {
			ages = append(ages, d)
		}
	})
	n.Hold("a", "b")
	var out []outcome
	send(n, a, l, "http://b/timers/1", time.Second, &out)
	l.At(30*time.Second, n.HealAll)
	l.Run()
	if len(out) != 1 || !errors.Is(out[0].err, ErrTimeout) || out[0].at != time.Second {
		t.Fatalf("got %+v, want one timeout at 1s", out)
	}
	if len(served) != 1 || served[0] < 30*time.Second || sent[0] != 0 {
		t.Fatalf("served at %v, sent at %v, want once after the heal at 30s, sent at 0", served, sent)
	}
	if len(ages) != 1 || time.Duration(ages[0]) != 30*time.Second {
		t.Fatalf("late ages %v, want [30s]", ages)
	}
	// After the heal the link carries messages at once again.
	out = nil
	send(n, a, l, "http://b/timers/2", time.Second, &out)
	l.Run()
	if len(out) != 1 || out[0].err != nil {
		t.Fatalf("after the heal got %+v, want an answer", out)
	}
}

// TestReplaySendsCapturedRequestsAgain proves a replay delivers again
// the requests captured on a link up to a time, as fresh requests the
// receiver serves, with their answers going nowhere; and that nothing is
// captured unless asked for.
func TestReplaySendsCapturedRequestsAgain(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 1)
	a := n.Listen("a", nil, true)
	var urls []string
	n.Listen("b", func(_ string, _ time.Duration, req node.Request, reply func(node.Response)) {
		urls = append(urls, req.URL)
		reply(node.Response{Status: 200})
	}, true)
	var out []outcome
	send(n, a, l, "http://b/timers/0", time.Second, &out) // not captured
	l.Run()
	n.CaptureFor()
	send(n, a, l, "http://b/timers/1", time.Second, &out)
	l.Run()
	sentBy := l.Now()
	l.At(sentBy+time.Second, func() { send(n, a, l, "http://b/timers/2", time.Second, &out) })
	l.Run()
	urls = nil
	if got := n.Replay("a", "b", sentBy); got != 1 {
		t.Fatalf("replayed %d, want 1", got)
	}
	l.Run()
	if len(urls) != 1 || urls[0] != "/timers/1" {
		t.Fatalf("served %v, want [/timers/1]", urls)
	}
	if len(out) != 3 {
		t.Fatalf("got %d completions, want the 3 sends' only", len(out))
	}
}
