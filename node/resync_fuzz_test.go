package node

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// FuzzParseResyncQuery proves a GET /timers query and Range header either
// parse into a request within the API's bounds or are refused with a
// reason, never a panic.
func FuzzParseResyncQuery(f *testing.F) {
	f.Add("/timers?node-for-replicas=10.0.0.1:7253&cluster-view-id=12&time-from=1000", "100")
	f.Add("/timers?node-for-replicas=a&cluster-view-id=18446744073709551615&include-current-view=1", "")
	f.Add("/timers?node-for-replicas=%zz", "-1")
	f.Add("/timers?cluster-view-id=1&time-from=9223372036854775807", "99999999999999999999")
	f.Fuzz(func(t *testing.T, target, rng string) {
		q, err := parseResyncQuery(target, rng)
		if err != nil {
			if _, bad := err.(*wire.BadRequestError); !bad {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		if q.requester == "" || q.limit < 1 || q.limit > MaxResyncPage || q.fromMs < 0 {
			t.Fatalf("accepted %+v", q)
		}
	})
}

// FuzzParseReferences proves a DELETE /timers/references body either
// parses into valid IDs and replica indexes or is refused with a reason.
func FuzzParseReferences(f *testing.F) {
	f.Add([]byte(`{"IDs":[{"ID":"0000000000000001","ReplicaIndex":0},{"ID":"ffffffffffffffff","ReplicaIndex":2}]}`))
	f.Add([]byte(`{"IDs":[]}`))
	f.Add([]byte(`{"IDs":null}`))
	f.Add([]byte(`{"IDs":[{"ID":"-000000000000001","ReplicaIndex":99}]} x`))
	f.Fuzz(func(t *testing.T, body []byte) {
		refs, ids, err := parseReferences(body)
		if err != nil {
			if _, bad := err.(*wire.BadRequestError); !bad {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		if len(refs) != len(ids) {
			t.Fatalf("%d references, %d IDs", len(refs), len(ids))
		}
		for i, r := range refs {
			if wire.FormatID(ids[i]) != strings.ToLower(r.ID) || r.ReplicaIndex < 0 || r.ReplicaIndex >= wire.MaxReplicationFactor {
				t.Fatalf("accepted %+v as %x", r, ids[i])
			}
		}
	})
}

// FuzzResyncPage answers a resyncing node's GET /timers with any status,
// next time-from and body, as a faulty or hostile peer might: the node
// must not panic, must take only well-formed timers placed on it, and its
// resync must still end.
func FuzzResyncPage(f *testing.F) {
	valid := `{"timers":[{"TimerID":"0b061cf000195000","OldReplicas":["10.0.0.2:7253"],"Timer":{"timing":{"interval":1,"repeat-for":1,"start-time-delta":500,"sequence-number":0,"version":"795001190617600000"},"callback":{"http":{"uri":"http://client.example/cb","opaque":"x"}},"reliability":{"cluster-view-id":"VIEW","replicas":["10.0.0.1:7253"]}}}]}`
	f.Add(uint16(200), int64(0), []byte(valid))
	f.Add(uint16(206), int64(5000), []byte(valid))
	f.Add(uint16(206), int64(-1), []byte(`{"timers":[]}`))
	f.Add(uint16(200), int64(0), []byte(`{"timers":[{"TimerID":"zz","Timer":{}}]}`))
	f.Add(uint16(500), int64(0), []byte(`oops`))
	f.Fuzz(func(t *testing.T, status uint16, next int64, body []byte) {
		clock, net := &manualClock{now: epoch}, &heldNet{}
		cfg := DefaultConfig()
		cfg.Address, cfg.Cluster = nodeA, Membership{Nodes: []string{nodeA, nodeB}}
		cfg.Clock, cfg.Network = clock, net
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		body = []byte(strings.ReplaceAll(string(body), "VIEW", strconv.FormatUint(n.ring.ViewID(), 10)))
		n.Resync(false)
		for i := 0; n.ResyncStatus().Running; i++ {
			if i > 10_000 {
				t.Fatal("resync never ends")
			}
			out := net.out
			net.out = nil
			for _, s := range out {
				if s.req.Method == "GET" {
					s.done(Response{Status: int(status), Header: Header{HeaderNextTimeFrom: strconv.FormatInt(next, 10)}, Body: body}, nil)
					continue
				}
				s.done(Response{Status: 200, Header: Header{}}, nil)
			}
			clock.advance(time.Second)
		}
		n.Held(func(held *Timer) bool {
			if held.State == Live && !slices.Contains(held.Placement().Replicas, nodeA) {
				t.Fatalf("took %s placed on %v", wire.FormatID(held.ID), held.Placement().Replicas)
			}
			return true
		})
	})
}
