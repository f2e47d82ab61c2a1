package sim

import (
	"fmt"
	"strings"
)

// Role host names: "<timer>.A" is the timer's primary, ".B" its first
// backup, ".C" the second, and so on: the rendezvous order of the timer's
// unique ID over the cluster's nodes (node.Ring.Replicas). A role is
// resolved when its step fires, from the ID the client learned when the
// timer's create (or update) returned.

// maxRoles bounds role letters (A..P, one per possible node).
const maxRoles = MaxNodes

// parseRole splits "t1.B" into ("t1", 1). ok is false for a plain host.
func parseRole(name string) (timer string, rank int, ok bool) {
	timer, role, found := strings.Cut(name, ".")
	if !found || timer == "" || len(role) != 1 || role[0] < 'A' || role[0] >= 'A'+maxRoles {
		return "", 0, false
	}
	return timer, int(role[0] - 'A'), true
}

// isRoleLike reports whether a host name looks like it means a role, so
// that a malformed one ("t1.a", "t1.AB") gets a role error.
func isRoleLike(name string) bool { return strings.Contains(name, ".") }

// validRole checks a role name against the plan.
func (p *Plan) validRole(name string) error {
	_, rank, ok := parseRole(name)
	switch {
	case !ok:
		return fmt.Errorf("bad role %q: want <timer>.<A..%c> (A primary, B first backup, ...)", name, 'A'+maxRoles-1)
	case rank >= p.Nodes:
		return fmt.Errorf("role %q: rank %d but only %d nodes", name, rank+1, p.Nodes)
	}
	return nil
}
