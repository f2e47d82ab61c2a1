package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FaultKind is one kind of fault a round injects.
type FaultKind string

// The faults of a round. Cuts name the nodes on one side (the rest of
// the cluster and the clients' namespace are the other side, unless
// Peers says otherwise).
const (
	// IsolateNode cuts one node off from every other namespace; frames
	// are dropped.
	IsolateNode FaultKind = "isolate"
	// Split cuts the nodes in two; the clients stay with the larger
	// side; frames are dropped.
	Split FaultKind = "split"
	// DeafNode drops every frame to one node: it sends, but hears no
	// answer and no request.
	DeafNode FaultKind = "deaf"
	// MuteNode drops every frame from one node: it hears, but nothing it
	// sends arrives.
	MuteNode FaultKind = "mute"
	// HoldCut cuts one node off, holding its traffic both ways, and the
	// heal delivers it all at once: late requests, replications and
	// answers that their senders gave up on long before.
	HoldCut FaultKind = "hold"
	// Kill kills one node with SIGKILL and restarts it on the same
	// configuration when the fault ends.
	Kill FaultKind = "kill"
	// Pause stops one node with SIGSTOP and continues it with SIGCONT.
	Pause FaultKind = "pause"
	// Degrade makes every link slow and unreliable: delay with jitter,
	// loss, duplication and reordering (degradedRule).
	Degrade FaultKind = "degrade"
)

// AllFaults are the kinds a schedule draws from, in the order a short
// schedule cycles through them.
var AllFaults = []FaultKind{IsolateNode, HoldCut, Kill, DeafNode, Pause, Degrade, MuteNode, Split}

// degradedRule is what Degrade does to every link: the numbers a
// congested, lossy network shows.
var degradedRule = Rule{Delay: 200 * time.Millisecond, Jitter: 100 * time.Millisecond,
	Loss: 0.05, Dup: 0.01, Reorder: 0.01, ReorderBy: 300 * time.Millisecond}

// Round is one round of a schedule: a quiet lead-in, a fault that lasts
// For, and the heal; the round ends Settle after the heal.
type Round struct {
	N    int
	Kind FaultKind
	// Nodes are the node indices the fault hits (one side of a split).
	Nodes []int
	// For is how long the fault lasts; Settle how long the run watches
	// after the heal before the next round.
	For, Settle time.Duration
}

// String says what the round does.
func (r Round) String() string {
	return fmt.Sprintf("round %d: %s of %s for %v", r.N, r.Kind, r.target(), r.For)
}

// target names what the fault hits.
func (r Round) target() string {
	if len(r.Nodes) == 0 {
		return "every link"
	}
	return strings.Join(names(r.Nodes), ",")
}

func names(idx []int) []string {
	out := make([]string, len(idx))
	for i, n := range idx {
		out[i] = fmt.Sprintf("n%d", n+1)
	}
	return out
}

// Schedule draws rounds of faults for a cluster of nodes from seed: the
// first len(kinds) rounds use every kind once in a seeded order, later
// rounds draw kinds at random. The same seed gives the same schedule.
func Schedule(seed uint64, rounds, nodes int, kinds []FaultKind, settle time.Duration) []Round {
	rng := rand.New(rand.NewPCG(seed, 0x5c4ed))
	order := slices.Clone(kinds)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	out := make([]Round, rounds)
	for i := range out {
		k := order[rng.IntN(len(order))]
		if i < len(order) {
			k = order[i]
		}
		r := Round{N: i + 1, Kind: k, Settle: settle, For: time.Duration(6+rng.IntN(9)) * time.Second}
		switch k {
		case Split:
			perm := rng.Perm(nodes)
			r.Nodes = perm[:nodes/2]
			slices.Sort(r.Nodes)
		case Pause:
			r.For = time.Duration(3+rng.IntN(6)) * time.Second
			r.Nodes = []int{rng.IntN(nodes)}
		case Degrade:
			r.Nodes = nil // every link
		default:
			r.Nodes = []int{rng.IntN(nodes)}
		}
		out[i] = r
	}
	return out
}
