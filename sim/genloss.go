package sim

import (
	"fmt"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// genLoss adds, drawn from faults after every other draw of the plan so
// that it moves no earlier choice, a write that only one node takes and
// that node then loses, to plans of one site that do not scale (so that
// the generator knows where the timer is placed): a write its quorum
// did not take must not be acknowledged, or G7 finds an acknowledged
// write lost. One plan with storage in three gets genCrashAfterWrite, one plan
// without storage in four genLoneWriter.
func genLoss(p *Plan, faults Source, safety time.Duration) {
	if p.enabled(mixScale) || p.enabled(mixSites) {
		return
	}
	if p.enabled(MixStorage) {
		if faults.IntN("crash-after-write", 3) == 0 {
			genCrashAfterWrite(p, faults, safety)
		}
		return
	}
	if faults.IntN("lone-writer", 4) == 0 {
		genLoneWriter(p, faults, safety)
	}
}

// genLoneWriter is genLoss's sequence without storage: a timer of
// factor 3 with a client-chosen ID, popping every second; one of its
// replicas cut off from every other node (not from the clients) 2 to
// 10 s after the create; an update through that replica, by the ID the
// create answered (its bloom filter names the three replicas), 0.5 to
// 1.4 s into the cut; the replica's crash 1 to 4 s after the update and
// its restart, empty, 1 to 5 s later; and the heal 1 to 10 s after
// that. The replica takes the update alone, so it must not acknowledge
// it: a write that counts a replica's answer twice towards its quorum
// (mutation old-replicas-not-written appends the replicas the bloom
// names to the targets again) acknowledges it, and the crash loses it.
// A heal of the plan's other faults within the cut cuts the replica off
// again at once.
func genLoneWriter(p *Plan, src Source, safety time.Duration) {
	addrs := initialAddrs(p)
	c := genTimerStep(p, src, OpCreate, "w1", time.Duration(src.IntN("lone-at", int(safety/time.Second)/3))*time.Second)
	c.ID = 1<<63 | uint64(src.IntN("lone-id-hi", 1<<31))<<31 | uint64(src.IntN("lone-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag = time.Second, 60*time.Second, 3, ""
	replicas := checker.Replicas(addrs, c.ID, c.RF)
	writer := nodeName(p, replicas[src.IntN("lone-writer-rank", len(replicas))])
	var others []string
	for i := 1; i <= p.Nodes; i++ {
		if n := fmt.Sprintf("n%d", i); n != writer {
			others = append(others, n)
		}
	}
	cut := c.At + time.Duration(2+src.IntN("lone-cut-after", 9))*time.Second
	u := genTimerStep(p, src, OpUpdate, "w1", cut+time.Duration(5+src.IntN("lone-update-at", 10))*100*time.Millisecond)
	u.Interval = time.Duration(5+5*src.IntN("lone-update-interval", 4)) * time.Second
	u.RepeatFor, u.RF, u.Tag, u.Bare = 4*u.Interval, c.RF, "", false
	fmt.Sscanf(writer, "n%d", &u.Via)
	crash := u.At + time.Duration(1+src.IntN("lone-crash-after", 4))*time.Second
	back := crash + time.Duration(1+src.IntN("lone-back-after", 5))*time.Second
	heal := back + time.Duration(1+src.IntN("lone-heal-after", 10))*time.Second
	if heal >= safety {
		return
	}
	split := Step{At: cut, Op: OpPartition, Side: []string{writer}, Peers: others}
	recut(p, split, heal)
	p.Steps = append(p.Steps, c, split, u,
		Step{At: crash, Op: OpCrash, Side: []string{writer}}, Step{At: back, Op: OpRestart, Side: []string{writer}},
		Step{At: heal, Op: OpHeal})
	p.End = max(p.End, c.At+c.span()+genSettle, u.At+u.span()+genSettle)
}

// genCrashAfterWrite is genLoss's sequence with storage: a timer popping
// every 2 s created through any node, and a crash of every node 0 to 6
// ms after the create is sent (a sync takes diskSyncTime, and the
// network a millisecond or so each way), all back 1 to 5 s later. No
// node may answer the create before its disk holds it: one that answers
// before its changes are synced (mutation reply-before-durable) has its
// answer reach the client while the crash takes the write from every
// disk. (A full disk would show it over seconds rather than
// milliseconds, but the checker excuses a crash after a full disk as it
// does one after a lying disk (checker/disk.go diskLost), though a node
// sees a full disk and answers 503.)
func genCrashAfterWrite(p *Plan, src Source, safety time.Duration) {
	c := genTimerStep(p, src, OpCreate, "d1", time.Duration(src.IntN("synced-at", int(safety/time.Second)/2))*time.Second)
	c.Interval, c.RepeatFor, c.Tag = 2*time.Second, 60*time.Second, ""
	crash := c.At + time.Duration(src.IntN("synced-crash-after", 120))*50*time.Microsecond
	back := crash + time.Duration(1+src.IntN("synced-back-after", 5))*time.Second
	if back >= safety {
		return
	}
	p.Steps = append(p.Steps, c)
	for i := 1; i <= p.Nodes; i++ {
		n := []string{fmt.Sprintf("n%d", i)}
		p.Steps = append(p.Steps, Step{At: crash, Op: OpCrash, Side: n}, Step{At: back, Op: OpRestart, Side: n})
	}
	p.End = max(p.End, c.At+c.span()+genSettle)
}

// initialAddrs returns the addresses of the plan's first members.
func initialAddrs(p *Plan) []string {
	members := p.InitialMembers()
	addrs := make([]string, len(members))
	for i, m := range members {
		addrs[i] = p.nodeAddr(m)
	}
	return addrs
}

// recut adds, for every heal of the plan's other faults from split's
// start to until, split again at that heal (after it, as the plan's sort
// is stable): a heal ends every cut in force.
func recut(p *Plan, split Step, until time.Duration) {
	for _, s := range p.Steps {
		if s.Op == OpHeal && s.At >= split.At && s.At < until {
			again := split
			again.At = s.At
			p.Steps = append(p.Steps, again)
		}
	}
}
