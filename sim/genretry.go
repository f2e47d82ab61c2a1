package sim

import (
	"fmt"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// genRetryAhead adds, drawn from faults after every other draw of the
// plan so that it moves no earlier choice, one plan in two that loses
// messages (mix "loss") and has one site that does not scale (so that the
// generator knows where the timer is placed), the shape of
// scenarios/README.md W6, where one replica holds a client write's first
// try and the other its retry: a timer of factor 2 with a client-chosen
// ID, created through any node; one replica's clock 1.5 s ahead (within
// MaxClockSkew, so its peers take its messages), and an update through
// that replica whose replication to the other is lost, so that only it
// holds that version, dated ahead; 100 to 300 ms later (soon enough that
// the proxy has seldom heard of a later version of the clock ahead, so
// that its own is older) an update through the node ranked third, which
// is no replica: the replica ahead answers it 409 (it
// holds a newer version), the other takes it, and the proxy writes it
// again above the newer version, a retry lost on its way to the replica
// that took the first try. Each loss is one message of a link that
// otherwise works (OpLose), recorded as a lost message about the timer.
// The clock ahead steps back 15 s after the create. Which replica holds
// the first try, and what the clocks and crashes do between the tries,
// is one of four shapes, a quarter of the plans each, each a road to a
// rare merge of the tries:
//
//   - The primary is ahead and the backup holds the first try. The
//     primary's callback of its first pop of the retry is lost, so that
//     its record marks the pop missed; the backup pops it at its rank
//     under the first try, and the answer to its notice is the retry,
//     ahead, telling of the pop as missed: the backup must owe only what
//     its first try owes (node/merge.go owedOnce, probe
//     progress/retry-ahead-owes-once).
//   - The same, and the clocks of N44 (scenarios/README.md): the proxy's
//     clock 1 to 1.4 s behind from the newer write on, so that the
//     retry, dated by the newer version, is more than the retry window
//     (2 s) past its first try, and the backup's clock stepped 2.5 to
//     3.4 s ahead a second after the tries, so that the retry's start,
//     rebuilt on it, is as far past the first try's: neither clock tells
//     the tries apart as one write, only the first try the retry names
//     (probe progress/same-write-by-first-try). Both steps are undone 15 s
//     after the create.
//   - W6's, and a crash of the primary, kept on disk (mix storage), while
//     its callback of pop 1 is still out, 1.5 s after that pop, and its
//     restart after the backup's second pop: the first message of the
//     retry the backup takes (the primary's start-up resync, or its
//     notice of the pop it missed) is behind the pops the backup made of
//     the first try, and tells of pop 1 as missed: the backup must keep
//     its own marks of those pops, not the sender's (node/merge.go
//     carryOwn, probe progress/retry-behind-owes-once; scenarios/README.md
//     N45). Plans that keep nothing on disk draw W6's instead.
//   - The backup is ahead and the primary holds the first try: it pops
//     it at its rank, before the backup's turn under the retry, and its
//     notice, of the first try's version, reaches the backup holding the
//     retry behind that pop: the backup takes the pop as made (teach's
//     carry, probe apply/older-version-carried) and does not make it
//     again.
func genRetryAhead(p *Plan, faults Source, safety time.Duration) {
	if p.enabled(mixScale) || p.enabled(mixSites) || !p.enabled("loss") || faults.IntN("retry-ahead", 2) != 0 {
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
	gap := time.Duration(100+50*faults.IntN("retry-ahead-gap", 5)) * time.Millisecond
	retried := genTimerStep(p, faults, OpUpdate, "ra", newer.At+gap)
	retried.Interval = time.Duration(2+faults.IntN("retry-ahead-interval", 3)) * time.Second
	retried.RepeatFor, retried.RF, retried.Tag, retried.Bare = 4*retried.Interval, 2, "", false
	fmt.Sscanf(proxy, "n%d", &retried.Via)
	shape := faults.IntN("retry-ahead-shape", 4)
	if shape == 3 && !p.enabled(MixStorage) {
		shape = 0 // the crash needs the retry kept on disk
	}
	first := backup
	if shape == 2 {
		primary, first = backup, primary // the backup is ahead
	}
	fmt.Sscanf(primary, "n%d", &newer.Via)
	p.Steps = append(p.Steps, c,
		Step{At: jump, Op: OpJump, Side: []string{primary}, Delta: ahead},
		Step{At: newer.At, Op: OpLose, Side: []string{primary}, Peers: []string{first}, OneWay: true, Timer: "ra", For: time.Second},
		newer,
		Step{At: retried.At, Op: OpLose, Side: []string{proxy}, Peers: []string{first}, OneWay: true, Timer: "ra", Count: 1, For: time.Second})
	if shape != 2 {
		cb := fmt.Sprintf("c%d", retried.Callback)
		p.Steps = append(p.Steps, Step{At: retried.At, Op: OpLose, Side: []string{primary}, Peers: []string{cb}, OneWay: true, Timer: "ra", For: retried.Interval + time.Second})
	}
	p.Steps = append(p.Steps, retried, Step{At: back, Op: OpJump, Side: []string{primary}, Delta: -ahead})
	if shape == 1 {
		behind := time.Duration(1000+100*faults.IntN("retry-ahead-behind", 5)) * time.Millisecond
		step := time.Duration(2500+100*faults.IntN("retry-ahead-step", 10)) * time.Millisecond
		p.Steps = append(p.Steps,
			Step{At: jump, Op: OpJump, Side: []string{proxy}, Delta: -behind},
			Step{At: back, Op: OpJump, Side: []string{proxy}, Delta: behind},
			Step{At: retried.At + time.Second, Op: OpJump, Side: []string{first}, Delta: step},
			Step{At: back, Op: OpJump, Side: []string{first}, Delta: -step})
	}
	if shape == 3 {
		p.Steps = append(p.Steps,
			Step{At: retried.At + retried.Interval + 1500*time.Millisecond, Op: OpCrash, Side: []string{primary}},
			Step{At: retried.At + 2*retried.Interval + 3500*time.Millisecond, Op: OpRestart, Side: []string{primary}})
	}
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
