package sim

import (
	"fmt"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// genRetryAhead adds, drawn from faults after every other draw of the
// plan so that it moves no earlier choice, one plan in four that loses
// messages (mix "loss") and has one site that does not scale (so that the
// generator knows where the timer is placed), the shape of
// scenarios/README.md W6, where one replica holds a client write's first
// try and the others its retry: a timer of factor 2 with a client-chosen
// ID, created through any node; its primary's clock 1.5 s ahead (within
// MaxClockSkew, so its peers take its messages), and an update through
// the primary whose replication to the backup is lost, so that only the
// primary holds that version, dated ahead; 1 s later an update through
// the node ranked third, which is no replica: the primary answers it 409
// (it holds a newer version), the backup takes it, and the proxy writes
// it again above the primary's version, a retry lost on its way to the
// backup. The primary's callback of its first pop of the retry is lost
// too, so that its record marks the pop missed; the backup pops it at
// its rank under the first try, and the answer to its notice is the
// retry, ahead, telling of the pop as missed: the backup must owe only
// what its first try owes (node/merge.go owedOnce, probe
// progress/retry-ahead-owes-once). Each loss is one message of a link
// that otherwise works (OpLose), recorded as a lost message about the
// timer. The primary's clock steps back 15 s after the create.
func genRetryAhead(p *Plan, faults Source, safety time.Duration) {
	if p.enabled(mixScale) || p.enabled(mixSites) || !p.enabled("loss") || faults.IntN("retry-ahead", 4) != 0 {
		return
	}
	c := genTimerStep(p, faults, OpCreate, "ra", time.Duration(faults.IntN("retry-ahead-at", int(safety/time.Second)/2))*time.Second)
	c.ID = 1<<63 | uint64(faults.IntN("retry-ahead-id-hi", 1<<31))<<31 | uint64(faults.IntN("retry-ahead-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag = 10*time.Second, 40*time.Second, 2, ""
	order := checker.Replicas(initialAddrs(p), c.ID, 3)
	primary, backup, proxy := nodeName(p, order[0]), nodeName(p, order[1]), nodeName(p, order[2])
	ahead := 1500 * time.Millisecond
	jump, back := c.At+time.Second, c.At+15*time.Second
	if back >= safety {
		return
	}
	newer := genTimerStep(p, faults, OpUpdate, "ra", jump+500*time.Millisecond)
	newer.Interval, newer.RepeatFor, newer.RF, newer.Tag, newer.Bare = 10*time.Second, 30*time.Second, 2, "", false
	fmt.Sscanf(primary, "n%d", &newer.Via)
	retried := genTimerStep(p, faults, OpUpdate, "ra", newer.At+time.Second)
	retried.Interval = time.Duration(2+faults.IntN("retry-ahead-interval", 3)) * time.Second
	retried.RepeatFor, retried.RF, retried.Tag, retried.Bare = 4*retried.Interval, 2, "", false
	fmt.Sscanf(proxy, "n%d", &retried.Via)
	cb := fmt.Sprintf("c%d", retried.Callback)
	p.Steps = append(p.Steps, c,
		Step{At: jump, Op: OpJump, Side: []string{primary}, Delta: ahead},
		Step{At: newer.At, Op: OpLose, Side: []string{primary}, Peers: []string{backup}, OneWay: true, Timer: "ra", For: time.Second},
		newer,
		Step{At: retried.At, Op: OpLose, Side: []string{proxy}, Peers: []string{backup}, OneWay: true, Timer: "ra", Count: 1, For: time.Second},
		Step{At: retried.At, Op: OpLose, Side: []string{primary}, Peers: []string{cb}, OneWay: true, Timer: "ra", For: retried.Interval + time.Second},
		retried,
		Step{At: back, Op: OpJump, Side: []string{primary}, Delta: -ahead})
	p.End = max(p.End, retried.At+retried.span()+genSettle)
}

// genTwinRestart adds, drawn from faults after every other draw of the
// plan so that it moves no earlier choice, to one plan in two of those
// whose twins (n1 and n2, MixSharedInstance) share one site, do not
// scale and keep nothing on disk, a clash that outlives its write and a
// restart that ends it: the twins cut off from each other from the
// start, and 4 to 8 pairs of creates of factor 2 at once, one of each
// pair through each twin, before either can know of the other. A pair
// whose IDs collide and whose replicas are the twins is taken by each
// twin alone: n1's pops every 2 s for 30 to 40 s, n2's once. The heal,
// 3 to 5 s later, brings n1's notices to n2, which answers that it holds
// another timer under the ID (n1 marks it refusing: the rank skips it);
// n2 crashes 2 to 4 s after the heal and restarts a second later without
// its records, so that it takes n1's next notice and n1 hears from it
// again (probe notice/refusing-cleared).
func genTwinRestart(p *Plan, faults Source) {
	if !p.enabled(MixSharedInstance) || p.enabled(MixStorage) || p.enabled(mixScale) || p.enabled(mixSites) ||
		faults.IntN("twin-restart", 2) != 0 {
		return
	}
	heal := time.Duration(3+faults.IntN("twin-restart-heal", 3)) * time.Second
	crash := heal + time.Duration(2+faults.IntN("twin-restart-crash", 3))*time.Second
	p.Steps = append(p.Steps, Step{At: 0, Op: OpPartition, Side: []string{"n1"}, Peers: []string{"n2"}})
	for i := range 4 + faults.IntN("twin-restart-pairs", 5) {
		long := Step{Op: OpCreate, Timer: fmt.Sprintf("x%d", 2*i+1), Via: 1, Client: 1 + faults.IntN("client", p.Clients),
			Callback: 1 + faults.IntN("cb", p.Callbacks), RF: 2, Interval: 2 * time.Second,
			RepeatFor: time.Duration(30+2*faults.IntN("twin-restart-repeat", 6)) * time.Second}
		short := long
		short.Timer, short.Via, short.Interval, short.RepeatFor = fmt.Sprintf("x%d", 2*i+2), 2, time.Second, 0
		p.Steps = append(p.Steps, long, short)
		p.End = max(p.End, long.At+long.span()+genSettle)
	}
	p.Steps = append(p.Steps, Step{At: heal, Op: OpHeal},
		Step{At: crash, Op: OpCrash, Side: []string{"n2"}}, Step{At: crash + time.Second, Op: OpRestart, Side: []string{"n2"}})
}
