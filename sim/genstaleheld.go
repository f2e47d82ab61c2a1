package sim

import (
	"fmt"
	"time"
)

// genStaleHeld adds, to one plan in three of one site that does not
// scale, drawn from faults after every other draw of the plan (Generate
// calls it last) so that it moves no earlier choice, a replica left
// holding a definition a client write replaced where nothing but repair
// mends it: a timer with a client-chosen ID, factor 2 or 3 and an
// interval of an hour, repeating for longer than any run lasts (live at
// the end however long the plan's other timers make the run; no pop of
// it falls due before the heal's repair round, so no notice repairs
// it); one of its replicas cut off from every other node
// and from the writing client 2 to 10 s after the create; an update to
// another hour-long definition (in one plan of three with a factor one
// smaller, which leaves the cut replica, the last, out: it misses the
// tell of that and holds the replaced definition), or a delete, through
// another node 0.5 to 1.4 s into the cut; and the heal, the liveness phase's, 15 to 35 s
// after the cut. The cut replica still holds the replaced definition
// live when the faults stop, and a repair round of a replica that took
// the write must bring it the newer record, or the tombstone, within a
// round of the heal: G6 judges the definitions every node holds live at
// the end of the run (checker/versions.go), a minute after the heal
// (genQuiet).
func genStaleHeld(p *Plan, faults Source, safety time.Duration) {
	if p.enabled(mixScale) || p.enabled(mixSites) || faults.IntN("stale-held", 3) != 0 {
		return
	}
	src := faults
	cutFor := time.Duration(15+src.IntN("held-cut-for", 21)) * time.Second
	cut := safety - cutFor
	at := cut - time.Duration(2+src.IntN("held-cut-after", 9))*time.Second
	if at < 0 {
		return
	}
	c := genTimerStep(p, src, OpCreate, "r4", at)
	c.ID = 1<<63 | uint64(src.IntN("held-id-hi", 1<<31))<<31 | uint64(src.IntN("held-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag = time.Hour, genHeldFor, 2+src.IntN("held-rf", 2), ""
	w := genTimerStep(p, src, OpUpdate, "r4", cut+time.Duration(5+src.IntN("held-write-at", 10))*100*time.Millisecond)
	w.Interval, w.RepeatFor, w.RF, w.Tag, w.Bare = time.Hour, genHeldFor, c.RF, "", false
	rank := src.IntN("held-rank", c.RF)
	switch src.IntN("held-write", 3) {
	case 0:
		w.Op = OpDelete
	case 1:
		// A smaller factor leaves the last replica out: cut off, it
		// misses the tell of it and holds the replaced definition.
		w.RF, rank = c.RF-1, c.RF-1
	}
	victim, others := staleVictim(p, c, rank)
	fmt.Sscanf(others[src.IntN("held-via", len(others))], "n%d", &w.Via)
	staleCut(p, []string{victim}, others, w.Client, cut, safety)
	p.Steps = append(p.Steps, c, w)
}

// genHeldFor is genStaleHeld's repeat-for: longer than any run.
const genHeldFor = 1000 * time.Hour
