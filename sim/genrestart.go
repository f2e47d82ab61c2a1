package sim

import (
	"fmt"
	"time"
)

// genRestartWord adds, to one plan in three that keeps its records on
// disk and neither scales nor has sites, a busy timer one of whose
// replicas is down while the others pop it and comes back from its disk
// at the liveness phase (which restarts every node down): a timer of
// factor 3 with a client-chosen ID, popping every second for three
// minutes on an endpoint of its own, created 40 s before the liveness
// phase; its last replica crashes 5 s after the create and stays down.
// Back from its disk, its record says none of the pops the others made
// meanwhile was made, and every one is past its turn; the node waits
// one backup skew for their word before it pops such a pop (node/
// persist.go waitForWord). G4's rule at a restart from disk
// (checker/restarted.go) judges the pops it delivers in that skew
// wherever no other fault of the plan touched the timer from the
// others' pops to the restart (mutation restored-pops-at-once).
//
// In one such plan in two the primary deletes the timer while the last
// replica is down, and the replica comes back from its disk 15 s later,
// before the liveness phase (whose heal starts repair rounds at once):
// it holds the definition, which the others buried; the start-up
// resync's pages carry live records only, and the primary, which keeps
// the delete's tombstone for the replica, pushes it as the replica asks
// for its first pages (node/resyncserve.go markRepopulating), not at its
// next repair round. G5's rule at a restart from disk judges any pop of
// the definition it delivers. (The mutation
// restarting-replica-waits-for-a-round escapes it all the same: the
// replica's own first repair round, within a second of its boot, pushes
// its stale copy to the primary, whose 409 answers with the tombstone.)
// Drawn from faults after every other draw of the plan (Generate calls
// it last), so that it moves no earlier choice.
func genRestartWord(p *Plan, faults Source) {
	if !p.enabled(MixStorage) || p.enabled(mixScale) || p.enabled(mixSites) || len(p.InitialMembers()) < 3 ||
		p.Callbacks == MaxCallbacks {
		return
	}
	if faults.IntN("restart-word", 3) != 0 {
		return
	}
	at := p.LivenessFrom - 40*time.Second
	if at < time.Second {
		return
	}
	p.Callbacks++
	cb := p.Callbacks
	c := genTimerStep(p, faults, OpCreate, "k1", at)
	c.ID = 1<<63 | uint64(faults.IntN("restart-word-id-hi", 1<<31))<<31 | uint64(faults.IntN("restart-word-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag, c.Callback, c.Bare = time.Second, 3*time.Minute, 3, "", cb, false
	primary, _ := staleVictim(p, c, 0)
	last, _ := staleVictim(p, c, 2)
	fmt.Sscanf(nodeName(p, primary), "n%d", &c.Via)
	p.Steps = append(p.Steps, c, Step{At: at + 5*time.Second, Op: OpCrash, Side: []string{nodeName(p, last)}})
	p.End = max(p.End, c.At+c.span()+genSettle)
	if faults.IntN("restart-word-replaced", 2) == 0 {
		p.Steps = append(p.Steps, Step{At: at + 10*time.Second, Op: OpDelete, Timer: c.Timer, Client: c.Client, Via: c.Via},
			Step{At: at + 25*time.Second, Op: OpRestart, Side: []string{nodeName(p, last)}})
	}
}
