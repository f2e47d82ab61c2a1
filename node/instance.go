package node

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/murmur3"
)

// Instance numbers (docs/design.md, "Unique IDs"). Every timer ID carries
// the instance number of the node that issued it, so two nodes must never
// share one. A node that is not given one derives it from the membership,
// and since every node is configured with the same membership, every node
// derives the same assignment for every member:
//
//   - a member's number is the low 10 bits of its server hash (the murmur3
//     hash of its address that rendezvous hashing seeds with);
//   - members are assigned in a fixed order, the steady and leaving members
//     (sorted by address) before the joining ones (sorted), and a member
//     whose number is taken moves up to the next free one (wrapping), as
//     hashing.md resolves server hash clashes.
//
// Ordering the established members first means a node joining the cluster
// never takes the number of one already serving. A clash can still move a
// number when the joining nodes become steady ones; a node whose number
// changes on reload moves its ID generator MaxClockLead ahead (see
// Node.SetCluster), and a create that meets another definition under its ID
// is refused and retried under a fresh ID (see collides in apply.go).

// InstanceIDs returns the instance number every member of m derives.
func InstanceIDs(m Membership) (map[string]int, error) {
	steady := slices.Sorted(slices.Values(slices.Concat(m.Nodes, m.Leaving)))
	joining := slices.Sorted(slices.Values(m.Joining))
	order := slices.Concat(steady, joining)
	if len(order) > MaxInstanceID+1 {
		return nil, fmt.Errorf("node: cluster of %d members has more than the %d instance numbers IDs can carry", len(order), MaxInstanceID+1)
	}
	taken := make([]bool, MaxInstanceID+1)
	ids := make(map[string]int, len(order))
	for _, addr := range order {
		id := int(murmur3.SeedStringSum32(0, addr) & MaxInstanceID)
		for taken[id] {
			id = (id + 1) & MaxInstanceID
		}
		taken[id] = true
		ids[addr] = id
	}
	return ids, nil
}

// InstanceFor returns the instance number self issues IDs with: the
// configured one, or the derived one when configured is AutoInstanceID. A
// configured number that another member derives would issue that member's
// IDs, so it is an error.
func InstanceFor(self string, configured int, m Membership) (int, error) {
	ids, err := InstanceIDs(m)
	if err != nil {
		return 0, err
	}
	if configured == AutoInstanceID {
		return ids[self], nil
	}
	for _, addr := range m.All() {
		if addr != self && ids[addr] == configured {
			return 0, fmt.Errorf("node: config InstanceID %d is the number member %s derives; choose another or leave it unset on every node", configured, addr)
		}
	}
	return configured, nil
}

// A clash refused, not survived. Two members that share an instance number
// issue the same IDs and versions; the collision defence (collides) keeps
// one timer from replacing another, but twins can still give two writes
// one version. So every internal request carries its sender's number and
// address (HeaderInstance), and every node remembers the number each peer
// was last heard with. A node sent its own number by another knows of the
// clash at once; a node that hears two peers with one number tells each
// in its answers (HeaderInstanceClash), so twins that never talk to each
// other learn of it through any node they both write to. A node that
// knows it shares its number refuses client writes with 503, names the
// other node in its log and counts it (Stats.InstanceClashes), until that
// node is heard with another number (or, told by a third node, is no
// longer reported), leaves the membership, or its own number changes.

// clashReported is how long a clash a third node reported stands unless
// it reports it again.
const clashReported = time.Minute

// instanceHeaderOf is the HeaderInstance value of the requests of node
// self with the instance number given.
func instanceHeaderOf(instance int, self string) string {
	return strconv.Itoa(instance) + " " + self
}

// senderInstance reads the HeaderInstance of a request.
func senderInstance(req Request) (addr string, instance int, ok bool) {
	num, addr, found := strings.Cut(req.Header.Get(HeaderInstance), " ")
	instance, err := strconv.Atoi(num)
	return addr, instance, found && err == nil && addr != ""
}

// noteInstance notes the instance number an authentic internal request
// carries.
func (n *Node) noteInstance(req Request) {
	addr, instance, ok := senderInstance(req)
	if !ok || addr == n.self {
		return
	}
	n.peerInstances[addr] = instance
	if instance == n.instance {
		n.clash(addr, math.MaxInt64)
		return
	}
	delete(n.clashes, addr)
}

// twinOf returns the node known to share the instance number of the
// sender of req, an internal request this node took as authentic, for the
// answer to name (HeaderInstanceClash).
func (n *Node) twinOf(req Request) string {
	addr, instance, ok := senderInstance(req)
	if !ok || n.peerInstances[addr] != instance {
		return ""
	}
	if instance == n.instance && addr != n.self {
		return n.self
	}
	// The first in address order, found without sorting the table:
	// every internal request asks.
	twin := ""
	for other, i := range n.peerInstances {
		if other != addr && i == instance && (twin == "" || other < twin) {
			twin = other
		}
	}
	return twin
}

// clashTold notes the twin a peer's answer to an internal request named.
func (n *Node) clashTold(resp Response) {
	if twin := resp.Header.Get(HeaderInstanceClash); twin != "" && twin != n.self {
		n.clash(twin, n.nowMs()+clashReported.Milliseconds())
	}
}

// clash notes that twin issues IDs with this node's number, known until
// the given time (ms; math.MaxInt64 until it is heard with another).
func (n *Node) clash(twin string, until int64) {
	if _, known := n.clashes[twin]; !known {
		n.hit(probeInstanceClash)
		n.stats.InstanceClashes++
		n.log.Error("another node issues IDs with this node's instance number: refusing client writes until it is fixed",
			"instance", n.instance, "peer", twin)
	}
	n.clashes[twin] = max(n.clashes[twin], until)
}

// clashing refuses a client write while a clash is known.
func (n *Node) clashing() (Response, bool) {
	if len(n.clashes) == 0 {
		return Response{}, false // every write asks: no sort, no allocation
	}
	now := n.nowMs()
	var twins []string
	for _, twin := range slices.Sorted(maps.Keys(n.clashes)) {
		if n.clashes[twin] < now {
			delete(n.clashes, twin)
			continue
		}
		twins = append(twins, twin)
	}
	if len(twins) == 0 {
		return Response{}, false
	}
	n.hit(probeClashRefused)
	return unavailable(fmt.Sprintf("this node's instance number %d is also used by %s: give every member its own [identity] instance_id",
		n.instance, strings.Join(twins, ", "))), true
}

// forgetClashes drops what a membership or numbering change ended.
func (n *Node) forgetClashes(renumbered bool) {
	members := n.cfg.Cluster.withSelf(n.self).All()
	for addr := range n.clashes {
		if renumbered || !slices.Contains(members, addr) && !n.remoteSite(addr) {
			delete(n.clashes, addr)
		}
	}
	for addr := range n.peerInstances {
		if !slices.Contains(members, addr) && !n.remoteSite(addr) {
			delete(n.peerInstances, addr)
		}
	}
}

// remoteSite reports whether addr is a remote site's address.
func (n *Node) remoteSite(addr string) bool {
	for _, s := range n.cfg.RemoteSites {
		if s.Address == addr {
			return true
		}
	}
	return false
}
