package node

import (
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// heldBytesOf sums recordBytes over what n holds: what Stats.HeldBytes
// must say.
func heldBytesOf(n *Node) int64 {
	var sum int64
	n.Held(func(t *Timer) bool { sum += recordBytes(t); return true })
	return sum
}

// TestByteBudget proves the byte budget: a node takes client writes
// until their callbacks and opaque data (and the overhead of each record)
// would take it past Limits.MaxHeldBytes, then answers 503 with
// Retry-After naming the budget, counted as ShedBytes; a replica refuses
// a replicated record the same way; deletes are taken when full, and
// free room again. HeldBytes always equals the records' own count.
func TestByteBudget(t *testing.T) {
	const budget = 64 << 10
	h := newHarness(t, func(c *Config) { c.Limits.MaxHeldBytes = budget })
	opaque := strings.Repeat("x", 10<<10)
	var wires []string
	step := loopBound(t, budget, "creates until the budget refuses one")
	for {
		step()
		r := h.do("POST", "/timers", timerJSON(60, 60, cb, opaque))
		if r.Status == 503 {
			if !strings.Contains(r.Header.Get(wire.HeaderReason), "budget") || r.Header.Get(wire.HeaderRetryAfter) == "" {
				t.Fatalf("503 %q with Retry-After %q, want the budget named and a Retry-After", r.Header.Get(wire.HeaderReason), r.Header.Get(wire.HeaderRetryAfter))
			}
			break
		}
		if r.Status != 200 {
			t.Fatalf("create: %d %q", r.Status, r.Body)
		}
		wires = append(wires, strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))
	}
	st := h.node.Stats()
	if st.HeldBytes > budget || st.HeldBytes != heldBytesOf(h.node) || st.ShedBytes != 1 || len(wires) < 4 {
		t.Fatalf("after filling: %d timers, HeldBytes %d (records say %d), ShedBytes %d; want several, within %d, equal, 1",
			len(wires), st.HeldBytes, heldBytesOf(h.node), st.ShedBytes, budget)
	}
	url, body := ownRecord(h)
	big := strings.Replace(string(body), `"opaque":"x"`, `"opaque":"`+opaque+`"`, 1)
	if r := h.send(Request{Method: "PUT", URL: url, Body: []byte(big)}); r.Status != 503 {
		t.Errorf("replicated record past the budget: %d %q, want 503", r.Status, r.Body)
	}
	if r := h.do("DELETE", "/timers/"+wires[0], ""); r.Status != 200 {
		t.Fatalf("delete on a full node: %d %q, want 200", r.Status, r.Body)
	}
	h.clock.advance(2 * time.Minute) // the tombstone expires
	if r := h.do("POST", "/timers", timerJSON(60, 60, cb, opaque)); r.Status != 200 {
		t.Errorf("create once a delete freed room: %d %q, want 200", r.Status, r.Body)
	}
	if st := h.node.Stats(); st.HeldBytes != heldBytesOf(h.node) {
		t.Errorf("HeldBytes %d, records say %d", st.HeldBytes, heldBytesOf(h.node))
	}
}

// TestHeldBytesFollowTheRecords proves Stats.HeldBytes equals what the
// held records count through a cluster's life: creates, updates that
// grow and shrink the data, pops, deletes, expiries.
func TestHeldBytesFollowTheRecords(t *testing.T) {
	c := keyed(t, three...)
	check := func(when string) {
		t.Helper()
		for a, n := range c.nodes {
			if got, want := n.Stats().HeldBytes, heldBytesOf(n); got != want {
				t.Errorf("%s: %s HeldBytes %d, records say %d", when, a, got, want)
			}
		}
	}
	var wires []string
	for i := range 6 {
		r := c.client(three[i%3], "POST", "/timers", timerJSON(2, 6, cb, strings.Repeat("o", 100*i)))
		wires = append(wires, strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))
	}
	check("after creates")
	c.client(three[1], "PUT", "/timers/"+wires[0], timerJSON(2, 6, cb, strings.Repeat("p", 5000)))
	c.client(three[2], "PUT", "/timers/"+wires[5], timerJSON(2, 6, cb, ""))
	check("after updates")
	c.advance(3*time.Second, 200)
	c.client(three[0], "DELETE", "/timers/"+wires[1], "")
	check("after pops and a delete")
	c.advance(time.Minute, 200)
	check("after expiries")
}
