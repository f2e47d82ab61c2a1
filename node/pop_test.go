package node

import (
	"slices"
	"testing"
	"time"
)

// TestNextPopWaitsForTheCallbackBefore shows that a replica sends a
// timer's next pop only once the callback before it has answered: a pop
// notice of the later pop would otherwise tell the other replicas that
// the earlier one, still failing, was made, and they would skip it.
func TestNextPopWaitsForTheCallbackBefore(t *testing.T) {
	h := newHarness(t)
	h.create(timerJSON(1, 5, cb, "x"))
	h.clock.advance(time.Second)
	first := h.net.take("http://")
	if len(first) != 1 {
		t.Fatalf("at 1 s: got %d callbacks, want pop 1", len(first))
	}
	h.clock.advance(1500 * time.Millisecond)
	if got := h.net.take("http://"); len(got) != 0 {
		t.Fatalf("pop 2 sent while pop 1 awaits its answer: %v", seqs(reqsOf(got)))
	}
	first[0].done(Response{Status: 200}, nil)
	h.clock.advance(0)
	if got := seqs(h.pops("http://", 200)); !slices.Equal(got, []string{"2:x"}) {
		t.Fatalf("once pop 1 is answered: got %v, want pop 2 at once", got)
	}
}

func reqsOf(ss []*sent) []Request {
	var out []Request
	for _, s := range ss {
		out = append(out, s.req)
	}
	return out
}
