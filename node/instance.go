package node

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

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
// address (HeaderInstance), and a node that is sent its own number by
// another node refuses client writes with 503, names the other node in
// its log and counts it (Stats.InstanceClashes), until that node is heard
// with another number, leaves the membership, or this node's own number
// changes.

// instanceHeader is the HeaderInstance value of this node's requests.
func (n *Node) instanceHeader() string { return strconv.Itoa(n.instance) + " " + n.self }

// noteInstance reads the instance number an authentic internal request
// carries and notes a clash with its sender, or the end of one.
func (n *Node) noteInstance(req Request) {
	num, addr, ok := strings.Cut(req.Header.Get(HeaderInstance), " ")
	instance, err := strconv.Atoi(num)
	if !ok || err != nil || addr == n.self || addr == "" {
		return
	}
	if instance != n.instance {
		delete(n.clashes, addr)
		return
	}
	if !n.clashes[addr] {
		n.hit(probeInstanceClash)
		n.stats.InstanceClashes++
		n.log.Error("another node issues IDs with this node's instance number: refusing client writes until it is fixed",
			"instance", n.instance, "peer", addr)
	}
	n.clashes[addr] = true
}

// clashing refuses a client write while a clash is known.
func (n *Node) clashing() (Response, bool) {
	if len(n.clashes) == 0 {
		return Response{}, false
	}
	peers := slices.Sorted(maps.Keys(n.clashes))
	return unavailable(fmt.Sprintf("this node's instance number %d is also used by %s: give every member its own [identity] instance_id",
		n.instance, strings.Join(peers, ", "))), true
}

// forgetClashes drops the clashes a membership or numbering change ended.
func (n *Node) forgetClashes(renumbered bool) {
	members := n.cfg.Cluster.withSelf(n.self).All()
	for addr := range n.clashes {
		if renumbered || !slices.Contains(members, addr) && !n.remoteSite(addr) {
			delete(n.clashes, addr)
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
