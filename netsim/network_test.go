package netsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/node"
)

func newNet(t *testing.T, opts Options, seed uint64) (*Network, *Loop) {
	t.Helper()
	l := &Loop{}
	n, err := New(opts, l, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return n, l
}

func echo(from string, _ time.Duration, req node.Request, reply func(node.Response)) {
	reply(node.Response{Status: 200, Body: []byte(from + " " + req.URL)})
}

type outcome struct {
	at     time.Duration
	status int
	body   string
	err    error
}

func send(n *Network, ep *Endpoint, l *Loop, url string, timeout time.Duration, out *[]outcome) {
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
	l.Run()
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

// TestPausedHostIsToldWhenARequestWasSent proves a host that serves a
// request late, here once it resumes from a pause 5 s after the send,
// learns when the request was sent, not only when it arrived.
func TestPausedHostIsToldWhenARequestWasSent(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 1)
	a := n.Listen("a", nil, true)
	var served, sent time.Duration
	n.Listen("p", func(_ string, at time.Duration, _ node.Request, reply func(node.Response)) {
		served, sent = l.Now(), at
		reply(node.Response{Status: 200})
	}, true)
	n.Pause("p")
	l.At(100*time.Millisecond, func() {
		var out []outcome
		send(n, a, l, "http://p/timers", time.Second, &out)
	})
	l.At(5*time.Second, func() { n.Resume("p") })
	l.Run()
	if served < 5*time.Second || sent != 100*time.Millisecond {
		t.Fatalf("served at %v, told sent at %v; want served after the resume at 5s, sent at 100ms", served, sent)
	}
}

// TestPartitionOneWayAndHeal proves a one-way block drops only its
// direction: a request across it never arrives, a request the other way
// arrives but its reply is lost, so both senders time out; HealAll restores
// the link.
func TestPartitionOneWayAndHeal(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 2)
	served := map[string]int{}
	h := func(from string, _ time.Duration, req node.Request, reply func(node.Response)) {
		served[from]++
		reply(node.Response{Status: 200})
	}
	a := n.Listen("a", h, true)
	b := n.Listen("b", h, true)
	n.Block("a", "b")
	var ab, ba []outcome
	send(n, a, l, "http://b/x", time.Second, &ab)
	send(n, b, l, "http://a/x", time.Second, &ba)
	l.Run()
	if !errors.Is(ab[0].err, ErrTimeout) || !errors.Is(ba[0].err, ErrTimeout) {
		t.Fatalf("got a->b %v, b->a %v; want both timeouts", ab[0].err, ba[0].err)
	}
	if served["a"] != 0 || served["b"] != 1 {
		t.Fatalf("got served %v, want only b's request delivered", served)
	}
	n.HealAll()
	ab = nil
	send(n, a, l, "http://b/x", time.Second, &ab)
	l.Run()
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
	n.Listen("b", func(from string, _ time.Duration, req node.Request, reply func(node.Response)) {
		got = append(got, fmt.Sprintf("%s@%v", req.URL, l.now >= 5*time.Second))
		reply(node.Response{Status: 200})
	}, true)
	n.Clog("a", "b", 5*time.Second)
	var out []outcome
	for i := range 3 {
		send(n, a, l, fmt.Sprintf("http://b/%d", i), 10*time.Second, &out)
	}
	l.Run()
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
	n.Listen("b", func(_ string, _ time.Duration, _ node.Request, reply func(node.Response)) { held = reply }, true)
	var out []outcome
	send(n, a, l, "http://b/x", time.Second, &out)
	l.Run()
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
	l.Run()
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
		l.Run()
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

// TestBusyEndpointQueuesBurst proves the load model: 100 requests sent at
// once to an endpoint with 2 workers and 10 ms of service each are all
// answered, the last after about 50 x 10 ms of queueing, and none before
// its share of the queue; with no workers modelled the same burst is
// answered at network speed.
func TestBusyEndpointQueuesBurst(t *testing.T) {
	burst := func(o Options) (last time.Duration, st Stats) {
		n, l := newNet(t, o, 1)
		n.Listen("cb", func(_ string, _ time.Duration, _ node.Request, reply func(node.Response)) {
			reply(node.Response{Status: 200})
		}, false)
		src := n.Listen("n1", nil, true)
		for range 100 {
			src.Send(node.Request{Method: "POST", URL: "http://cb/x"}, 10*time.Second, func(r node.Response, err error) {
				if err != nil || r.Status != 200 {
					t.Fatalf("got %v %v, want 200", r.Status, err)
				}
				last = max(last, l.now)
			})
		}
		l.Run()
		return last, n.Stats()
	}
	o := DefaultOptions()
	free, st := burst(o)
	if free > 2*o.LatencyMax || st.Queued != 0 {
		t.Fatalf("unmodelled: last answer at %v, %d queued; want within two network delays, none queued", free, st.Queued)
	}
	o.EndpointWorkers, o.EndpointServiceTime = 2, 10*time.Millisecond
	busy, st := burst(o)
	if busy < 500*time.Millisecond || busy > 500*time.Millisecond+2*o.LatencyMax {
		t.Fatalf("2 workers x 10 ms: last answer at %v, want 500 ms plus at most two network delays", busy)
	}
	if st.Queued == 0 || st.Queued > 100 {
		t.Fatalf("queued %d requests, want some and at most 100", st.Queued)
	}
}

// TestBusyNodeSendsInTurn proves that a node's sends take its CPU in turn:
// 50 requests sent at once with 1 worker and 4 ms per send leave 4 ms
// apart.
func TestBusyNodeSendsInTurn(t *testing.T) {
	o := DefaultOptions()
	o.NodeWorkers, o.NodeSendTime = 1, 4*time.Millisecond
	o.LatencyMin, o.LatencyMean, o.LatencyMax = time.Millisecond, time.Millisecond, time.Millisecond
	n, l := newNet(t, o, 1)
	var arrivals []time.Duration
	n.Listen("cb", func(_ string, _ time.Duration, _ node.Request, reply func(node.Response)) {
		arrivals = append(arrivals, l.now)
		reply(node.Response{Status: 200})
	}, false)
	src := n.Listen("n1", nil, true)
	for range 50 {
		src.Send(node.Request{Method: "POST", URL: "http://cb/x"}, time.Minute, func(node.Response, error) {})
	}
	l.Run()
	if len(arrivals) != 50 {
		t.Fatalf("got %d arrivals, want 50", len(arrivals))
	}
	for i, at := range arrivals {
		if want := time.Duration(i+1)*4*time.Millisecond + time.Millisecond; at != want {
			t.Fatalf("arrival %d at %v, want %v", i, at, want)
		}
	}
}

// TestBusyNodeShedsWhatWouldWaitTooLong proves the load model keeps the
// production client's rules: a send that would wait for the sender's CPU
// longer than its MaxWait is shed at once (ErrShed) and uses no CPU, one
// without a MaxWait waits its turn, and a send's timeout counts from when
// it leaves, not from its queueing.
func TestBusyNodeShedsWhatWouldWaitTooLong(t *testing.T) {
	o := DefaultOptions()
	o.NodeWorkers, o.NodeSendTime = 1, time.Second
	o.LatencyMin, o.LatencyMean, o.LatencyMax = time.Millisecond, time.Millisecond, time.Millisecond
	n, l := newNet(t, o, 1)
	n.Listen("cb", func(_ string, _ time.Duration, _ node.Request, reply func(node.Response)) {
		reply(node.Response{Status: 200})
	}, false)
	src := n.Listen("n1", nil, true)
	errs := make([]error, 4)
	for i, wait := range []time.Duration{0, 1500 * time.Millisecond, 1500 * time.Millisecond, 0} {
		src.Send(node.Request{Method: "POST", URL: "http://cb/x", MaxWait: wait}, 1500*time.Millisecond, func(_ node.Response, err error) {
			errs[i] = err
		})
	}
	l.Run()
	// Sends 0 and 1 leave at 1 s and 2 s; send 2 would wait 2 s; send 3
	// waits 2 s and leaves at 3 s, answered well within its timeout.
	want := []error{nil, nil, ErrShed, nil}
	for i := range want {
		if !errors.Is(errs[i], want[i]) {
			t.Errorf("send %d: got %v, want %v", i, errs[i], want[i])
		}
	}
	if st := n.Stats(); st.Shed != 1 {
		t.Errorf("stats: got %d shed, want 1", st.Shed)
	}
}

func TestLoadOptionsValidate(t *testing.T) {
	o := DefaultOptions()
	o.NodeWorkers = -1
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "NodeWorkers -1") {
		t.Fatalf("got %v, want an error naming NodeWorkers -1", err)
	}
	o = DefaultOptions()
	o.EndpointServiceTime = 2 * MaxServiceTime
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "EndpointServiceTime") {
		t.Fatalf("got %v, want an error naming EndpointServiceTime", err)
	}
}
