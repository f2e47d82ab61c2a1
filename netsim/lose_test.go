package netsim

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// TestLoseTakesOneRequestOfALink proves a lose rule loses exactly the
// request it picks: the second request about timer 7 from a to b (skip
// 1), not the first, nor a request about another timer, nor one on the
// link b to a, nor an answer, nor one sent after the rule's time; its
// sender times out as for any lost request, and the tracer names it
// "lost" with the request.
func TestLoseTakesOneRequestOfALink(t *testing.T) {
	n, l := newNet(t, DefaultOptions(), 1)
	a := n.Listen("a", func(_ string, _ time.Duration, _ node.Request, reply func(node.Response)) {
		reply(node.Response{Status: 200})
	}, true)
	var served []string
	b := n.Listen("b", func(_ string, _ time.Duration, req node.Request, reply func(node.Response)) {
		served = append(served, req.URL)
		reply(node.Response{Status: 200})
	}, true)
	var lost []string
	n.SetTracer(func(what, _, _ string, req *node.Request, _ int64) {
		if what == "lost" {
			lost = append(lost, req.URL)
		}
	})
	about7 := func(req *node.Request) bool { return strings.HasSuffix(req.URL, "/timers/7") }
	n.Lose("a", "b", about7, 1, 10*time.Second)
	var out, back []outcome
	for _, url := range []string{"http://b/timers/7", "http://b/timers/8", "http://b/timers/7", "http://b/timers/7"} {
		send(n, a, l, url, time.Second, &out)
		l.Run()
	}
	send(n, b, l, "http://a/timers/7", time.Second, &back)
	l.Run()
	if len(lost) != 1 || lost[0] != "http://b/timers/7" {
		t.Fatalf("lost %v, want the second request about timer 7", lost)
	}
	if want := []string{"/timers/7", "/timers/8", "/timers/7"}; strings.Join(served, " ") != strings.Join(want, " ") {
		t.Fatalf("served %v, want %v", served, want)
	}
	if len(out) != 4 || !errors.Is(out[2].err, ErrTimeout) || out[0].err != nil || out[1].err != nil || out[3].err != nil {
		t.Fatalf("outcomes %+v, want the third (the lost one) to time out and the others answered", out)
	}
	if len(back) != 1 || back[0].err != nil {
		t.Fatalf("b to a: %+v, want an answer", back)
	}
	// A rule past its time loses nothing.
	n.Lose("a", "b", about7, 0, l.Now()+time.Second)
	l.At(l.Now()+2*time.Second, func() { send(n, a, l, "http://b/timers/7", time.Second, &out) })
	l.Run()
	if len(lost) != 1 || out[len(out)-1].err != nil {
		t.Fatalf("after the rule's time: lost %v, last outcome %+v, want nothing more lost", lost, out[len(out)-1])
	}
}
