package node

import (
	"fmt"
	"slices"

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
