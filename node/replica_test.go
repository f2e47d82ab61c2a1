package node

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestSupersedes proves the conflict rule for two records of one timer: a
// later client write wins; within one write the record that popped further
// wins; a tombstone ends its definition for good; duplicates change
// nothing.
func TestSupersedes(t *testing.T) {
	live := func(version uint64, seq uint32) *Timer { return &Timer{Version: version, Seq: seq} }
	tomb := func(version uint64, seq uint32) *Timer { return &Timer{Version: version, Seq: seq, Tombstone: true} }
	cases := []struct {
		name               string
		existing, incoming *Timer
		want               bool
	}{
		{"nothing held", nil, live(1, 0), true},
		{"nothing held, tombstone", nil, tomb(1, 0), true},
		{"later write", live(1, 5), live(2, 0), true},
		{"earlier write", live(2, 0), live(1, 5), false},
		{"later delete", live(1, 3), tomb(2, 0), true},
		{"write after delete", tomb(1, 0), live(2, 0), true},
		{"stale write after delete", tomb(2, 0), live(1, 9), false},
		{"pop notice", live(1, 1), live(1, 2), true},
		{"stale pop notice", live(1, 2), live(1, 1), false},
		{"duplicate", live(1, 2), live(1, 2), false},
		{"final pop", live(1, 2), tomb(1, 3), true},
		{"final pop seen before the last notice", live(1, 3), tomb(1, 2), true},
		{"notice after the final pop", tomb(1, 3), live(1, 4), false},
		{"duplicate tombstone", tomb(1, 3), tomb(1, 3), false},
	}
	for _, tc := range cases {
		if got := Supersedes(tc.existing, tc.incoming); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

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

// TestAnotherSitesNewerRecordRepairsThisSite shows that when another site
// answers a forward with a newer record (it took a delete whose forward to
// this site was lost), this site takes it and stops popping the timer.
func TestAnotherSitesNewerRecordRepairsThisSite(t *testing.T) {
	const remote = "127.0.0.2:7253"
	h := newHarness(t, func(c *Config) { c.RemoteSites = []Site{{Name: "site2", Address: remote}} })
	id := mustID(t, h.create(timerJSON(10, 60, cb, "x")))
	fwd := h.net.take("http://" + remote)
	if len(fwd) != 1 {
		t.Fatalf("got %d forwards to the other site, want 1", len(fwd))
	}
	held, _ := h.node.Timer(id)
	tomb := Timer{ID: id, Version: held.Version + 1, Start: held.Start, Interval: held.Interval, RepeatFor: held.RepeatFor,
		Tombstone: true, RF: held.RF, Placement: &Placement{Replicas: []string{remote}, Sites: []string{"site1", "site2"}}}
	fwd[0].done(Response{Status: 409, Header: Header{HeaderVersion: strconv.FormatUint(tomb.Version, 10)},
		Body: EncodeReplication(&tomb, h.node.nowMs())}, nil)
	if now, _ := h.node.Timer(id); !now.Tombstone || now.Version != tomb.Version {
		t.Fatalf("after the other site's 409: got version %d tombstone %v, want the tombstone %d", now.Version, now.Tombstone, tomb.Version)
	}
	h.clock.advance(time.Minute)
	if got := seqs(h.drainPops(cb, 200)); len(got) != 0 {
		t.Fatalf("got pops %v of a timer the other site deleted, want none", got)
	}
}

// TestDormantCopyHandsOnThePopThatFailed shows that a replica whose
// callback failed, asked for its record (a 409 answer), hands on the
// definition with the failed pop still to make, never as made.
func TestDormantCopyHandsOnThePopThatFailed(t *testing.T) {
	dormant := &Timer{Version: 7, Seq: 3, Tombstone: true, Dormant: true}
	got := live(dormant)
	if got.Tombstone || got.Dormant || got.Seq != 2 {
		t.Fatalf("got tombstone %v dormant %v seq %d, want a live record at seq 2", got.Tombstone, got.Dormant, got.Seq)
	}
	if dormant.Seq != 3 || !dormant.Dormant {
		t.Fatalf("the held copy changed: %+v", dormant)
	}
}
