package node

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPutAfterDeleteCreatesWithItsOwnFactor: a deleted timer is created
// again by a PUT, whatever its tombstone says: without a factor it gets
// the default, through the node that holds the tombstone as through one
// that holds nothing, and a factor other than the deleted timer's is no
// change of factor.
func TestPutAfterDeleteCreatesWithItsOwnFactor(t *testing.T) {
	for _, body := range []string{
		`{"timing":{"interval":60},"callback":{"http":{"uri":"` + cb + `"}}}`,
		`{"timing":{"interval":60},"callback":{"http":{"uri":"` + cb + `"}},"reliability":{"replication-factor":3}}`,
	} {
		c := newCluster(t, three...)
		r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":60},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`)
		wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
		id := mustID(t, wid)
		primary := NewRing(three).Replicas(id, 1)[0]
		if r := c.client(primary, "DELETE", "/timers/"+wid, ""); r.Status != 200 {
			t.Fatalf("DELETE: %d %s", r.Status, r.Body)
		}
		r = c.client(primary, "PUT", "/timers/"+wid, body)
		if r.Status != 200 {
			t.Fatalf("PUT after the delete, through the tombstone's holder: %d %s", r.Status, r.Body)
		}
		want := 2
		if strings.Contains(body, "replication-factor") {
			want = 3
		}
		if got := c.holders(wid); !slices.Equal(got, sorted(NewRing(three).Replicas(id, want))) {
			t.Errorf("%s: held by %v, want the %d replicas of the factor it gives or the default", body, got, want)
		}
	}
}

// TestUpdateThroughAStaleTombstoneLearnsTheFactor: an rf 3 timer
// finishes, and every replica holds its tombstone. One of them is cut
// off while an update with factor 3 makes the timer live again on the
// other two. An update without a factor through the cut-off node must
// not take the default from its stale tombstone and be acknowledged on
// its own copy (one of two is a quorum): the timer is live with factor
// 3, and that copy alone is lost with its node. Its replicas did not
// answer, so the factor is unknown (503); once they answer, the update
// keeps factor 3.
func TestUpdateThroughAStaleTombstoneLearnsTheFactor(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":1,"repeat-for":1},"callback":{"http":{"uri":"`+cb+`","opaque":"first"}},"reliability":{"replication-factor":3}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	id := mustID(t, wid)
	wantPops(t, c.advance(3*time.Second, 200), "1:first")
	cut := NewRing(three).Replicas(id, wire.DefaultReplicationFactor)[0]
	var other string
	for _, a := range three {
		if a != cut {
			other = a
		}
	}
	for _, a := range three {
		if tm, ok := c.nodes[a].Timer(id); !ok || tm.State != Tombstone {
			t.Fatalf("%s after the last pop: %v (held %v), want the tombstone", a, tm.State, ok)
		}
	}
	c.down[cut] = true
	again := `{"timing":{"interval":60},"callback":{"http":{"uri":"` + cb + `","opaque":"again"}},"reliability":{"replication-factor":3}}`
	if r := c.client(other, "PUT", "/timers/"+wid, again); r.Status != 200 {
		t.Fatalf("rf 3 update while %s is cut off: %d %s", cut, r.Status, r.Body)
	}
	update := `{"timing":{"interval":30},"callback":{"http":{"uri":"` + cb + `","opaque":"new"}}}`
	if r := c.client(cut, "PUT", "/timers/"+wid, update); r.Status != 503 {
		t.Fatalf("update without a factor through the cut-off tombstone holder: %d %s, want 503 (factor unknown)", r.Status, r.Body)
	}
	c.down[cut] = false
	c.advance(time.Second, 200)
	if r := c.client(cut, "PUT", "/timers/"+wid, update); r.Status != 200 {
		t.Fatalf("the same update once the replicas answer: %d %s", r.Status, r.Body)
	}
	if got := c.holders(wid); !slices.Equal(got, sorted(three)) {
		t.Errorf("held live by %v, want the factor's three replicas %v", got, sorted(three))
	}
}

// TestUpdateWithAFactorReachesTheDefaultsReplicas: a PUT without a factor
// may have created a deleted timer again on the default's replicas, and a
// later update that gives a smaller factor, through a node that holds no
// copy, must still reach them, or the default's backup goes on popping
// the definition the update replaced. Here an rf 1 timer is deleted and
// created again without a factor (the default, 2), then updated with
// factor 1 by the ID the client has from the first create, whose bloom
// names the primary only.
func TestUpdateWithAFactorReachesTheDefaultsReplicas(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":60},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	id := mustID(t, wid)
	replicas := NewRing(three).Replicas(id, wire.DefaultReplicationFactor)
	var other string
	for _, a := range three {
		if !slices.Contains(replicas, a) {
			other = a
		}
	}
	if r := c.client(replicas[0], "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	again := `{"timing":{"interval":20,"repeat-for":100},"callback":{"http":{"uri":"` + cb + `","opaque":"again"}}}`
	if r := c.client(other, "PUT", "/timers/"+wid, again); r.Status != 200 {
		t.Fatalf("PUT without a factor after the delete: %d %s", r.Status, r.Body)
	}
	if got := c.holders(wid); !slices.Equal(got, sorted(replicas)) {
		t.Fatalf("created again on %v, want the default's replicas %v", got, sorted(replicas))
	}
	update := `{"timing":{"interval":30,"repeat-for":100},"callback":{"http":{"uri":"` + cb + `","opaque":"new"}},"reliability":{"replication-factor":1}}`
	if r := c.client(other, "PUT", "/timers/"+wid, update); r.Status != 200 {
		t.Fatalf("PUT with factor 1: %d %s", r.Status, r.Body)
	}
	if got := c.holders(wid); !slices.Equal(got, replicas[:1]) {
		t.Errorf("after the update held live by %v, want its one replica %v", got, replicas[:1])
	}
	wantPops(t, c.advance(35*time.Second, 200), "1:new")
}

// TestUpdateThroughAMovedCopyKeepsTheFactor: a node a scale moved a timer
// off keeps a Moved record of it, and an update without a factor through
// that node must keep the timer's factor, as through a node that holds
// nothing, not take the default as for a deleted or finished timer: the
// timer is live on its new replicas, and with the default's smaller
// factor its third replica would go on popping the replaced definition.
func TestUpdateThroughAMovedCopyKeepsTheFactor(t *testing.T) {
	grown := []string{nodeA, nodeB, nodeC, nodeD}
	var id uint64
	var moved string
	for id = 1; moved == ""; id++ {
		for _, a := range three {
			if !slices.Contains(NewRing(grown).Replicas(id, 3), a) {
				moved = a
			}
		}
	}
	id--
	c := newCluster(t, three...)
	wid := wire.FormatWireID(id, NewRing(three).Bloom(three))
	create := `{"timing":{"interval":30,"repeat-for":300},"callback":{"http":{"uri":"` + cb + `","opaque":"old"}},"reliability":{"replication-factor":3}}`
	require.Equal(t, 200, c.client(nodeA, "PUT", "/timers/"+wid, create).Status)
	m := Membership{Nodes: three, Joining: []string{nodeD}}
	c.join(nodeD, m)
	c.reload(m)
	held, ok := c.nodes[moved].Timer(id)
	require.True(t, ok && held.State == Moved, "%s holds %+v after the scale, want a Moved record", moved, held)
	update := `{"timing":{"interval":20,"repeat-for":300},"callback":{"http":{"uri":"` + cb + `","opaque":"new"}}}`
	require.Equal(t, 200, c.client(moved, "PUT", "/timers/"+wid, update).Status)
	assert.Equal(t, sorted(NewRing(grown).Replicas(id, 3)), c.holders(wid))
	for a, n := range c.nodes {
		if t2, ok := n.Timer(id); ok && t2.State == Live {
			assert.EqualValues(t, 3, t2.RF, "factor held by %s", a)
		}
	}
	wantPops(t, c.advance(25*time.Second, 200), "1:new")
}

// TestRetryAboveANewerVersionLearnsTheFactorAgain (seed 1400105): an
// update without a factor learns it from the copies, and when a replica
// answers that it holds a newer version, the write goes again above it.
// That version is a write the factor was not learnt from: here an rf 3
// timer had ended, so the update read tombstones and took the default,
// 2; a concurrent update with factor 3 made it live again, newer; the
// retry kept 2, replaced the rf 3 definition, and the third replica held
// nothing. A retry learns the factor again.
func TestRetryAboveANewerVersionLearnsTheFactorAgain(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":1,"repeat-for":1},"callback":{"http":{"uri":"`+cb+`","opaque":"first"}},"reliability":{"replication-factor":3}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	wantPops(t, c.advance(3*time.Second, 200), "1:first")
	bare, given := three[1], three[2]
	var got *Response
	update := `{"timing":{"interval":30},"callback":{"http":{"uri":"` + cb + `","opaque":"bare"}}}`
	c.nodes[bare].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{}, Body: []byte(update)}, func(r Response) { got = &r })
	c.deliver(c.net.take("http://10."), nil) // its reads: every copy a tombstone
	puts := c.net.take("http://10.")         // its write, with the default, held back
	if len(puts) == 0 || got != nil {
		t.Fatalf("after its reads the update sent %d messages and answered %v, want its write in flight", len(puts), got)
	}
	c.clock.advance(time.Millisecond)
	if r := c.client(given, "PUT", "/timers/"+wid, `{"timing":{"interval":60},"callback":{"http":{"uri":"`+cb+`","opaque":"given"}},"reliability":{"replication-factor":3}}`); r.Status != 200 {
		t.Fatalf("rf 3 update: %d %s", r.Status, r.Body)
	}
	c.deliver(puts, nil)
	c.settle()
	if got == nil || got.Status != 200 {
		t.Fatalf("the update without a factor: %v, want 200", got)
	}
	if h := c.holders(wid); !slices.Equal(h, sorted(three)) {
		t.Errorf("held live by %v, want the factor's three replicas %v", h, sorted(three))
	}
}
