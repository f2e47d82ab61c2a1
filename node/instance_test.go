package node

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/murmur3"
	"pgregory.net/rapid"

	"github.com/chronos-timer/chronos/wire"
)

// TestInstanceIDsAreUniqueAndAgreed proves the derivation every node runs:
// for any membership, every member gets a distinct number in range, and
// every node computes the same assignment whatever order its
// configuration lists the members in.
func TestInstanceIDsAreUniqueAndAgreed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		all := rapid.SliceOfNDistinct(rapid.StringMatching(`127\.0\.[0-9]{1,3}\.[0-9]{1,3}:[0-9]{2,5}`), 1, 64, rapid.ID).Draw(t, "members")
		joining := rapid.IntRange(0, len(all)-1).Draw(t, "joining")
		m := Membership{Nodes: all[joining:], Joining: all[:joining]}
		ids, err := InstanceIDs(m)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]string{}
		for _, a := range all {
			id, ok := ids[a]
			if !ok || id < 0 || id > MaxInstanceID {
				t.Fatalf("%s: got %d, %v, want a number in 0..%d", a, id, ok, MaxInstanceID)
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("%s and %s both got %d", a, other, id)
			}
			seen[id] = a
		}
		shuffled := Membership{Nodes: slices.Clone(m.Nodes), Joining: slices.Clone(m.Joining)}
		slices.Reverse(shuffled.Nodes)
		slices.Reverse(shuffled.Joining)
		again, _ := InstanceIDs(shuffled)
		if !maps.Equal(ids, again) {
			t.Fatalf("reordered membership: got %v, want %v", again, ids)
		}
	})
}

// clashingPair returns two loopback addresses whose derived numbers clash,
// in sorted order.
func clashingPair(t *testing.T) (string, string) {
	t.Helper()
	byNumber := map[uint32]string{}
	for port := 1000; port < 65535; port++ {
		a := fmt.Sprintf("127.0.0.1:%d", port)
		h := murmur3.SeedStringSum32(0, a) & MaxInstanceID
		if b, ok := byNumber[h]; ok {
			return b, a
		}
		byNumber[h] = a
	}
	t.Fatal("no clash among 64k addresses")
	return "", ""
}

// TestInstanceClashMovesTheLaterMember proves clashes are resolved as
// hashing.md resolves server hash clashes: the member first in order keeps
// its number and the other moves to the next free one; a joining member
// yields to a steady one whatever their addresses.
func TestInstanceClashMovesTheLaterMember(t *testing.T) {
	a, b := clashingPair(t) // a < b
	h := int(murmur3.SeedStringSum32(0, a) & MaxInstanceID)
	next := (h + 1) & MaxInstanceID
	for _, tc := range []struct {
		name         string
		m            Membership
		wantA, wantB int
	}{
		{"both steady", Membership{Nodes: []string{b, a}}, h, next},
		{"the later address joining", Membership{Nodes: []string{a}, Joining: []string{b}}, h, next},
		{"the earlier address joining", Membership{Nodes: []string{b}, Joining: []string{a}}, next, h},
		{"the later address leaving", Membership{Nodes: []string{a}, Leaving: []string{b}}, h, next},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := InstanceIDs(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if ids[a] != tc.wantA || ids[b] != tc.wantB {
				t.Errorf("got %s=%d %s=%d, want %d and %d", a, ids[a], b, ids[b], tc.wantA, tc.wantB)
			}
		})
	}
}

// TestConfiguredInstanceClashStopsTheNode proves a node configured with
// the number another member derives refuses to start, naming the member,
// and that a configured number nobody derives is used as given.
func TestConfiguredInstanceClashStopsTheNode(t *testing.T) {
	m := Membership{Nodes: three}
	ids, _ := InstanceIDs(m)
	cfg := DefaultConfig()
	cfg.Address, cfg.Cluster = three[0], m
	cfg.Clock, cfg.Network = &manualClock{now: epoch}, &heldNet{}
	cfg.InstanceID = ids[three[1]]
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), three[1]) {
		t.Fatalf("New with %s's number: got %v, want an error naming %s", three[1], err, three[1])
	}
	free := 0
	for slices.Contains(slices.Collect(maps.Values(ids)), free) {
		free++
	}
	cfg.InstanceID = free
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, derived := n.Instance(); got != free || derived {
		t.Errorf("Instance: got %d, %v, want %d, false", got, derived, free)
	}
}

// TestRenumberedNodeIssuesPastTheLead proves a node whose derived number
// changes with a reload (a clash with a new member) issues its next IDs
// under the new number, dated past the lead, so they cannot repeat an ID
// the number's previous holder issued before its own reload.
func TestRenumberedNodeIssuesPastTheLead(t *testing.T) {
	a, b := clashingPair(t) // a keeps the number when both are steady
	h := newHarness(t, func(c *Config) { c.Address, c.Cluster = b, Membership{Nodes: []string{b}} })
	before, _ := h.node.Instance()
	first := mustID(t, h.create(timerJSON(60, 60, cb, "x")))
	if err := h.node.SetCluster(Membership{Nodes: []string{a, b}}); err != nil {
		t.Fatal(err)
	}
	after, _ := h.node.Instance()
	if after == before {
		t.Fatalf("instance after %s joined: still %d", a, after)
	}
	// The next create would need a's answer; the ID it would carry is the
	// generator's next.
	second, _ := h.node.ids.next(h.node.nowMs())
	if got := int(second >> seqBits & MaxInstanceID); got != after || second <= first {
		t.Fatalf("ID after renumbering: got %016x (instance %d), want instance %d and above %016x", second, got, after, first)
	}
	if ahead := IDTime(second) - h.node.nowMs(); ahead < DefaultMaxClockLead.Milliseconds() {
		t.Errorf("ID after renumbering dated %d ms ahead, want at least the lead %d", ahead, DefaultMaxClockLead.Milliseconds())
	}
}

// TestInstanceClashRefusesClientWrites: two members configured with one
// instance number find out from the first message between them, refuse
// client writes (a delete too: its tombstone's version is an ID the twin
// may issue as well) with a 503 that names the other, and take writes again
// once the other is heard with a number of its own.
func TestInstanceClashRefusesClientWrites(t *testing.T) {
	c := newClusterWith(t, func(addr string, cfg *Config) {
		if addr != three[2] {
			cfg.InstanceID = 1000
		}
	}, three...)
	body := `{"timing":{"interval":60},"callback":{"http":{"uri":"` + cb + `"}},"reliability":{"replication-factor":3}}`
	// The first create reaches the twin and is taken: nothing was heard yet.
	first := c.client(three[0], "POST", "/timers", body)
	if first.Status != 200 {
		t.Fatalf("first create: %d %s", first.Status, first.Body)
	}
	r := c.client(three[1], "POST", "/timers", body)
	if r.Status != 503 || !strings.Contains(string(r.Body), three[0]) {
		t.Fatalf("create through the twin that was told: got %d %q, want 503 naming %s", r.Status, r.Body, three[0])
	}
	if r := c.client(three[1], "DELETE", first.Header.Get(wire.HeaderLocation), ""); r.Status != 503 || !strings.Contains(string(r.Body), three[0]) {
		t.Fatalf("delete through the twin that was told: got %d %q, want 503 naming %s", r.Status, r.Body, three[0])
	}
	if got := c.nodes[three[1]].Stats().InstanceClashes; got != 1 {
		t.Errorf("InstanceClashes = %d, want 1", got)
	}
	if r := c.client(three[2], "POST", "/timers", body); r.Status != 200 {
		t.Errorf("a node with its own number refused a create: %d %s", r.Status, r.Body)
	}
	// The operator gives the first twin a number of its own; its next
	// message ends the clash.
	cfg := c.cfgs[three[0]]
	cfg.InstanceID = 999
	c.cfgs[three[0]] = cfg
	c.restart(three[0])
	if r := c.client(three[0], "POST", "/timers", body); r.Status != 200 {
		t.Fatalf("create through the renumbered node: %d %s", r.Status, r.Body)
	}
	if r := c.client(three[1], "POST", "/timers", body); r.Status != 200 {
		t.Errorf("create through the other twin after the fix: %d %s", r.Status, r.Body)
	}
}

// TestInstanceClashToldByAThirdNode: twins that never reach each other
// learn of the clash from a node both write to, which names the other
// twin in its answers; the clash ends when the report is a minute old
// (clashReported), or when the twin leaves the membership.
func TestInstanceClashToldByAThirdNode(t *testing.T) {
	c := newClusterWith(t, func(addr string, cfg *Config) {
		if addr != three[2] {
			cfg.InstanceID = 1000
		}
	}, three...)
	c.lose = func(host string, req Request) bool {
		from, _, _ := senderInstance(req)
		return host == three[0] && from == three[1] || host == three[1] && from == three[0]
	}
	body := `{"timing":{"interval":60},"callback":{"http":{"uri":"` + cb + `"}},"reliability":{"replication-factor":3}}`
	for _, via := range []string{three[0], three[1], three[0]} {
		c.client(via, "POST", "/timers", body)
	}
	for _, twin := range three[:2] {
		if r := c.client(twin, "POST", "/timers", body); r.Status != 503 {
			t.Errorf("create through twin %s: got %d, want 503", twin, r.Status)
		}
		if got := c.nodes[twin].Stats().InstanceClashes; got != 1 {
			t.Errorf("twin %s counts %d clashes, want 1", twin, got)
		}
	}
	if got := c.nodes[three[2]].Stats().InstanceClashes; got != 0 {
		t.Errorf("the third node counts %d clashes of its own", got)
	}
	// Reported by a third node, a clash stands for clashReported unless
	// reported again.
	c.clock.advance(clashReported + time.Millisecond)
	if r := c.client(three[1], "POST", "/timers", body); r.Status != 200 {
		t.Errorf("create through twin %s once the report is old: got %d %s, want 200", three[1], r.Status, r.Body)
	}
	// Reported again by that create; the twin's leaving the membership
	// ends it.
	if err := c.nodes[three[1]].SetCluster(Membership{Nodes: three[1:]}); err != nil {
		t.Fatal(err)
	}
	if r := c.client(three[1], "POST", "/timers", body); r.Status != 200 {
		t.Errorf("create through %s once its twin left the membership: got %d %s, want 200", three[1], r.Status, r.Body)
	}
}
