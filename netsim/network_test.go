package netsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// loop is a minimal event queue for these tests: (time, insertion) order.
type loop struct {
	now    time.Duration
	seq    int
	events []event
}

type event struct {
	at  time.Duration
	seq int
	f   func()
}

func (l *loop) Now() time.Duration { return l.now }

func (l *loop) At(t time.Duration, f func()) {
	if t < l.now {
		panic(fmt.Sprintf("event in the past: %v < %v", t, l.now))
	}
	l.seq++
	l.events = append(l.events, event{t, l.seq, f})
}

func (l *loop) run() {
	for len(l.events) > 0 {
		sort.SliceStable(l.events, func(i, j int) bool {
			a, b := l.events[i], l.events[j]
			return a.at < b.at || a.at == b.at && a.seq < b.seq
		})
		e := l.events[0]
		l.events = l.events[1:]
		l.now = e.at
		e.f()
	}
}

func newNet(t *testing.T, opts Options, seed uint64) (*Network, *loop) {
	t.Helper()
	l := &loop{}
	n, err := New(opts, l, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return n, l
}

func echo(from string, req node.Request, reply func(node.Response)) {
	reply(node.Response{Status: 200, Body: []byte(from + " " + req.URL)})
}

type outcome struct {
	at     time.Duration
	status int
	body   string
	err    error
}

func send(n *Network, ep *Endpoint, l *loop, url string, timeout time.Duration, out *[]outcome) {
	ep.Send(node.Request{Method: "POST", URL: url}, timeout, func(r node.Response, err error) {
		*out = append(*out, outcome{l.now, r.Status, string(r.Body), err})
	})
}

// TestDeliveryAndErrors proves a request reaches its host with the target
// path and the sender's name, that down and unknown hosts refuse, that a
// paused host times the sender out, and that done runs exactly once.
func TestDeliveryAndErrors(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 1)
	a := n.Listen("a", nil, true)
	n.Listen("b", echo, true)
	n.Listen("c", echo, true)
	n.Crash("c")
	n.Listen("p", echo, true)
	n.Pause("p")
	var out []outcome
	send(n, a, l, "http://b/timers/1?x=y", time.Second, &out)
	send(n, a, l, "http://c/timers", time.Second, &out)
	send(n, a, l, "http://nowhere/timers", time.Second, &out)
	send(n, a, l, "http://p/timers", time.Second, &out)
	send(n, a, l, "not-a-url", time.Second, &out)
	l.run()
	if len(out) != 5 {
		t.Fatalf("got %d completions, want 5: %+v", len(out), out)
	}
	byErr := map[string]int{}
	for _, o := range out {
		switch {
		case o.err == nil:
			if o.body != "a /timers/1?x=y" || o.at > 2*DefaultOptions().LatencyMax {
				t.Errorf("got %q at %v, want %q within 2 x LatencyMax", o.body, o.at, "a /timers/1?x=y")
			}
			byErr["ok"]++
		case errors.Is(o.err, ErrTimeout):
			if o.at != time.Second {
				t.Errorf("timeout at %v, want 1s", o.at)
			}
			byErr["timeout"]++
		default:
			byErr[o.err.Error()]++
		}
	}
	want := map[string]int{"ok": 1, ErrRefused.Error(): 2, "timeout": 1, ErrBadURL.Error(): 1}
	if fmt.Sprint(byErr) != fmt.Sprint(want) {
		t.Errorf("got outcomes %v, want %v", byErr, want)
	}
}

// TestPartitionOneWayAndHeal proves a one-way block drops only its
// direction: a request across it never arrives, a request the other way
// arrives but its reply is lost, so both senders time out; HealAll restores
// the link.
func TestPartitionOneWayAndHeal(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 2)
	served := map[string]int{}
	h := func(from string, req node.Request, reply func(node.Response)) {
		served[from]++
		reply(node.Response{Status: 200})
	}
	a := n.Listen("a", h, true)
	b := n.Listen("b", h, true)
	n.Block("a", "b")
	var ab, ba []outcome
	send(n, a, l, "http://b/x", time.Second, &ab)
	send(n, b, l, "http://a/x", time.Second, &ba)
	l.run()
	if !errors.Is(ab[0].err, ErrTimeout) || !errors.Is(ba[0].err, ErrTimeout) {
		t.Fatalf("got a->b %v, b->a %v; want both timeouts", ab[0].err, ba[0].err)
	}
	if served["a"] != 0 || served["b"] != 1 {
		t.Fatalf("got served %v, want only b's request delivered", served)
	}
	n.HealAll()
	ab = nil
	send(n, a, l, "http://b/x", time.Second, &ab)
	l.run()
	if ab[0].err != nil {
		t.Fatalf("after heal got %v, want success", ab[0].err)
	}
}

// TestClogHoldsThenReleasesInOrder proves a clogged link delays messages
// until the clog ends and then delivers all of them.
func TestClogHoldsThenReleasesInOrder(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 3)
	a := n.Listen("a", nil, true)
	var got []string
	n.Listen("b", func(from string, req node.Request, reply func(node.Response)) {
		got = append(got, fmt.Sprintf("%s@%v", req.URL, l.now >= 5*time.Second))
		reply(node.Response{Status: 200})
	}, true)
	n.Clog("a", "b", 5*time.Second)
	var out []outcome
	for i := range 3 {
		send(n, a, l, fmt.Sprintf("http://b/%d", i), 10*time.Second, &out)
	}
	l.run()
	if len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return s[len(s)-4:] != "true" }) {
		t.Fatalf("got deliveries %v, want 3, all at or after 5s", got)
	}
}

// TestCrashDropsOldIncarnation proves that after a crash and restart, the
// completion of a request the dead incarnation sent is never delivered, and
// a reply by a dead incarnation never reaches the sender.
func TestCrashDropsOldIncarnation(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 4)
	a := n.Listen("a", nil, true)
	var held func(node.Response)
	n.Listen("b", func(_ string, _ node.Request, reply func(node.Response)) { held = reply }, true)
	var out []outcome
	send(n, a, l, "http://b/x", time.Second, &out)
	l.run()
	if len(out) != 1 || !errors.Is(out[0].err, ErrTimeout) {
		t.Fatalf("got %+v, want one timeout (b never replied)", out)
	}
	out = nil
	send(n, a, l, "http://b/y", 10*time.Second, &out)
	l.At(l.now+time.Second, func() {
		n.Crash("b")
		n.Listen("b", echo, true)
		held(node.Response{Status: 200}) // the dead incarnation answers late
		n.Crash("a")
		n.Listen("a", nil, true)
	})
	l.run()
	if len(out) != 0 {
		t.Fatalf("got %+v, want no completion for a dead sender", out)
	}
}

// TestDeterministicNoise proves the same seed gives the same outcomes under
// loss, duplication and reordering, and that noise touches only links
// between noisy hosts.
func TestDeterministicNoise(t *testing.T) {
	opts := DefaultOptions()
	opts.LossRate, opts.DuplicateRate, opts.ReorderRate = 0.2, 0.2, 0.3
	run := func(seed uint64) (string, Stats) {
		n, l := newNet(t, opts, seed)
		a := n.Listen("a", nil, true)
		n.Listen("b", echo, true)
		n.Listen("cb", echo, false)
		var out []outcome
		for i := range 200 {
			send(n, a, l, fmt.Sprintf("http://b/%d", i), time.Second, &out)
			send(n, a, l, fmt.Sprintf("http://cb/cb%d", i), time.Second, &out)
		}
		l.run()
		for _, o := range out {
			if o.err != nil && o.body == "" && o.at < time.Second {
				t.Errorf("got %v at %v, want only timeouts from noise", o.err, o.at)
			}
		}
		cbOK := 0
		for _, o := range out {
			if o.err == nil && strings.HasPrefix(o.body, "a /cb") {
				cbOK++
			}
		}
		if cbOK != 200 {
			t.Errorf("got %d clean-link successes, want 200", cbOK)
		}
		return fmt.Sprint(out), n.Stats()
	}
	s1, st := run(7)
	s2, _ := run(7)
	if s1 != s2 {
		t.Fatal("same seed gave different outcomes")
	}
	if st.Lost == 0 || st.Duplicated == 0 || st.Reordered == 0 {
		t.Fatalf("got stats %+v, want some loss, duplication and reordering", st)
	}
	if st.Duplicated > 200 || st.Lost > 2*200*2 {
		t.Fatalf("got stats %+v, want noise only on the noisy link", st)
	}
}
