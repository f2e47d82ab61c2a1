package checker

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// placedTimer is the timer of the excuse tests: rf 2 on five members, so
// that three members hold no replica of it.
const placedTimer = 0x0b061cf0001d7000

// placed builds the excuse tests' base history: one timer created through
// its primary, interval 1 s, repeat-for 10 s, every pop delivered by the
// primary 20 ms after due. It returns the history, the timer's replicas
// (primary first) and a member that is neither replica nor proxy.
func placed(t *testing.T) (h *History, primary, backup, other string) {
	t.Helper()
	members := []string{"n1", "n2", "n3", "n4", "n5"}
	r := Replicas(members, placedTimer, 2)
	for _, m := range members {
		if !slices.Contains(r, m) {
			other = m
		}
	}
	h = &History{
		Members:      members,
		Ops:          []Op{write(1, Create, placedTimer, "a", sec, 10*sec, 0, 10*ms, OK)},
		Pops:         pops(r[0], "a", 1, 10, 0),
		End:          25 * sec,
		MaxClockSkew: ms,
		MaxNetDelay:  5 * ms,
	}
	h.Ops[0].Node = r[0]
	for i := range h.Pops {
		h.Pops[i].Timer = placedTimer
	}
	return h, r[0], r[1], other
}

// handOver makes the backup deliver pops from..10, each at its rank (2 s
// after due), instead of the primary.
func handOver(h *History, backup string, from int) {
	h.Pops = h.Pops[:from-1]
	for k := from; k <= 10; k++ {
		p := pop(time.Duration(k)*sec+2*sec+20*ms, backup, "a", k)
		p.Timer = placedTimer
		h.Pops = append(h.Pops, p)
	}
}

// TestEveryExcuseIsNeededAndBounded shows, for each named excuse, a
// history it rightly excuses (the fault on the timer's own replica, link,
// endpoint or message) and that the same history with the fault moved to
// a member holding no replica, or to another timer, is a violation.
func TestEveryExcuseIsNeededAndBounded(t *testing.T) {
	cases := []struct {
		excuse Excuse
		want   string // the guarantee broken once the fault is moved
		build  func(h *History, primary, backup, other string, related bool)
	}{
		{ExFault + "/crash", "G3", func(h *History, p, b, o string, rel bool) {
			// The primary crashes; the backup pops at its rank.
			h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{pick(rel, p, o)}}}
			handOver(h, b, 3)
		}},
		{ExFault + "/pause", "G3", func(h *History, p, b, o string, rel bool) {
			h.Faults = []Fault{{At: 2500 * ms, Kind: Pause, Nodes: []string{pick(rel, p, o)}},
				{At: 20 * sec, Kind: Resume, Nodes: []string{pick(rel, p, o)}}}
			handOver(h, b, 3)
		}},
		{ExFault + "/partition", "G3", func(h *History, p, b, o string, rel bool) {
			// The primary is cut off from the callback endpoint.
			h.Faults = []Fault{{At: 2500 * ms, Kind: Partition, Nodes: []string{pick(rel, p, o)}, Peers: []string{"client"}},
				{At: 20 * sec, Kind: Heal}}
			handOver(h, b, 3)
		}},
		{ExFault + "/fail-callback", "G4", func(h *History, p, b, o string, rel bool) {
			// The endpoint refuses the primary's pop 3; the backup pops
			// it at its rank. Moved: the endpoint is fine, takes the
			// primary's pop, and the backup's is a duplicate.
			uri := pick(rel, "http://client/cb", "http://elsewhere/cb")
			h.Faults = []Fault{{At: 2900 * ms, Kind: FailCallback, Nodes: []string{uri}},
				{At: 3500 * ms, Kind: CallbackOK, Nodes: []string{uri}}}
			if rel {
				h.Pops[2].Answered = 500
			}
			again := pop(5020*ms, b, "a", 3)
			again.Timer = placedTimer
			h.Pops = append(h.Pops, again)
		}},
		{ExFault + "/lost", "G4", func(h *History, p, b, o string, rel bool) {
			// The primary's popped notice of pop 3 is lost: the backup
			// pops 3 again at its rank.
			h.Faults = []Fault{{At: 3030 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b},
				Timer: pickTimer(rel)}}
			dup := pop(5020*ms, b, "a", 3)
			dup.Timer = placedTimer
			h.Pops = append(h.Pops, dup)
		}},
		{ExFault + "/overload", "G4", func(h *History, p, b, o string, rel bool) {
			// The primary's notice of pop 3 waits behind its backlog
			// past the backup's turn: the backup pops 3 again at its
			// rank. Moved: another timer's notice waited.
			h.Faults = []Fault{{At: 3030 * ms, Kind: Overload, Nodes: []string{p}, Peers: []string{b},
				Detail: "waited=2.5s", Timer: pickTimer(rel)}}
			dup := pop(5020*ms, b, "a", 3)
			dup.Timer = placedTimer
			h.Pops = append(h.Pops, dup)
		}},
		{ExFault + "/overload", "G4", func(h *History, p, b, o string, rel bool) {
			// The primary sheds its pop 3 (it would wait longer than
			// the skew) and the backup makes it at its rank. Moved:
			// another timer's pop was shed, and this one's pop 3 at the
			// backup's rank fits no pop of its schedule.
			h.Faults = []Fault{{At: 3 * sec, Kind: Overload, Nodes: []string{p}, Peers: []string{"client"},
				Detail: ShedDetail, Timer: pickTimer(rel)}}
			h.Pops[2] = pop(5020*ms, b, "a", 3)
			h.Pops[2].Timer = placedTimer
		}},
		{ExFault + "/queued", "G4", func(h *History, p, b, o string, rel bool) {
			// The primary's notice of pop 3 waits in the backup's
			// inbound queue past the backup's turn: the backup pops 3
			// again at its rank. Moved: the primary's callback waited at
			// the endpoint, which delivers nothing twice.
			h.Faults = []Fault{{At: 3030 * ms, Kind: Queued, Nodes: []string{p}, Peers: []string{pick(rel, b, "client")},
				Detail: pick(rel, "waited=2.5s record", "waited=60ms"), Timer: placedTimer}}
			dup := pop(5020*ms, b, "a", 3)
			dup.Timer = placedTimer
			h.Pops = append(h.Pops, dup)
		}},
		{ExHeldInbound, "G3", func(h *History, p, b, o string, rel bool) {
			// The write's replication to the primary waits 1.5 s in its
			// inbound queue: it applies the write that late and pops 1
			// that late. Moved: the replication to a member holding no
			// replica waited.
			h.Faults = []Fault{{At: 5 * ms, Kind: Queued, Nodes: []string{b}, Peers: []string{pick(rel, p, o)},
				Detail: "waited=1.5s record", Timer: placedTimer}}
			h.Pops[0].At = 2500 * ms
		}},
		{ExFault + "/" + Excuse(startSpreadFault), "G4", func(h *History, p, b, o string, rel bool) {
			// The backup takes the write; its replication to the
			// primary waits 1.95 s for its CPU, so the primary starts
			// that late and pops 1 as the backup's rank comes: both
			// deliver it. Moved: the replication to a member of no role
			// waited.
			// The client has its answer once the primary took it; pops
			// every 10 s, long after the wait.
			h.Ops[0].Node, h.Ops[0].Return = b, 1960*ms
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.End = 70 * sec
			h.Faults = []Fault{{At: 5 * ms, Kind: Overload, Nodes: []string{b}, Peers: []string{pick(rel, p, o)},
				Detail: "waited=1.95s record", Timer: placedTimer}}
			h.Pops = h.Pops[:6]
			for k := range h.Pops {
				h.Pops[k].At = time.Duration(k+1)*10*sec + 1950*ms
			}
			dup := pop(12020*ms, b, "a", 1)
			dup.Timer = placedTimer
			h.Pops = append(h.Pops, dup)
		}},
		{ExOvertook, "G3", func(h *History, p, b, o string, rel bool) {
			// The primary makes pop 3 on time, but its callback waits
			// 2.5 s behind its backlog, so the backup, told nothing,
			// pops 3 at its rank and its delivery comes first: the
			// pop was made in time. Moved: another timer's callback
			// waited, so the primary's delivery is late too and the
			// backup's, first, is judged by the primary's rank.
			// Pops every 10 s, so that neither fits another pop.
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.End = 70 * sec
			h.Faults = []Fault{{At: 30 * sec, Kind: Overload, Nodes: []string{p}, Peers: []string{"client"},
				Detail: "waited=2.5s", Timer: pickTimer(rel)}}
			h.Pops = h.Pops[:6]
			for k := range h.Pops {
				h.Pops[k].At = time.Duration(k+1)*10*sec + 20*ms
			}
			h.Pops[2].At = 32502 * ms
			first := pop(32020*ms, b, "a", 3)
			first.Timer = placedTimer
			h.Pops = append(h.Pops, first)
		}},
		{ExAllDown, "G2", func(h *History, p, b, o string, rel bool) {
			// Both replicas crash: the timer is gone.
			n := pick(rel, p, o)
			h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{n}},
				{At: 2500 * ms, Kind: Crash, Nodes: []string{pick(rel, b, o)}}}
			h.Pops = h.Pops[:2]
		}},
		{ExAllFailed, "G2", func(h *History, p, b, o string, rel bool) {
			// The endpoint refuses pop 3 from both replicas (it fails
			// around each one's turn), each of which tries it once; the
			// primary goes on with pop 4 in between. Moved: the refused
			// pops were another timer's, so pop 3 of this one is lost.
			h.Faults = []Fault{{At: 2900 * ms, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
				{At: 3500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}},
				{At: 5000 * ms, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
				{At: 5015 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}}}
			h.Pops = append(h.Pops[:2], h.Pops[3:]...)
			for _, r := range []struct {
				node string
				at   time.Duration
			}{{p, 3020 * ms}, {b, 5010 * ms}} {
				refused := pop(r.at, r.node, pick(rel, "a", "x"), 3)
				refused.Timer, refused.Answered = pickTimer(rel), 500
				h.Pops = append(h.Pops, refused)
			}
			if !rel {
				h.Ops = append(h.Ops, write(2, Create, pickTimer(rel), "x", sec, 10*sec, 0, 10*ms, OK))
			}
		}},
		{ExCopiesLost, "G2", func(h *History, p, b, o string, rel bool) {
			// The create's replication to the backup is lost, and the
			// primary, its only holder, crashes before pop 3 and
			// restarts empty: no copy is left. Moved: the lost message
			// was another timer's, so the backup holds one and owes
			// pops 3 and on at its rank.
			h.Faults = []Fault{{At: 5 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: pickTimer(rel)},
				{At: 2500 * ms, Kind: Crash, Nodes: []string{p}}}
			h.Pops = h.Pops[:2]
		}},
		{ExDiskLost, "G2", func(h *History, p, b, o string, rel bool) {
			// With storage, the loss copies-lost excuses without it
			// (the create's replication to the backup is lost, and the
			// primary, its only holder, crashes at once) needs a disk
			// that lied to the primary before its crash: it comes back
			// without the copy, and no pop is made. Moved: the lie was
			// another node's, so the primary comes back from its disk
			// with the timer and owes every pop.
			h.Storage = true
			h.Faults = []Fault{{At: 5 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: placedTimer},
				{At: 0, Kind: DiskLie, Nodes: []string{pick(rel, p, o)}},
				{At: 100 * ms, Kind: Crash, Nodes: []string{p}}, {At: 200 * ms, Kind: Restart, Nodes: []string{p}}}
			h.Pops = nil
		}},
		{ExDiskLost, "G2", func(h *History, p, b, o string, rel bool) {
			// The primary's disk was found corrupt at its restart and
			// wiped. Moved: another node's was.
			h.Storage = true
			h.Faults = []Fault{{At: 5 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: placedTimer},
				{At: 100 * ms, Kind: Crash, Nodes: []string{p}},
				{At: 200 * ms, Kind: DiskWiped, Nodes: []string{pick(rel, p, o)}}, {At: 200 * ms, Kind: Restart, Nodes: []string{p}}}
			h.Pops = nil
		}},
		{ExHeld, "G3", func(h *History, p, b, o string, rel bool) {
			// The primary stands still while the write reaches it: it
			// applies the write 1.5 s late and pops 1 that late; its
			// notice brings it the backup's earlier start.
			n := pick(rel, p, o)
			h.Faults = []Fault{{At: 0, Kind: Pause, Nodes: []string{n}}, {At: 1500 * ms, Kind: Resume, Nodes: []string{n}}}
			h.Pops[0].At = 2520 * ms
		}},
		{ExSharedID, "G3", func(h *History, p, b, o string, rel bool) {
			// The primary, a twin, holds another timer under the ID,
			// which its twin issued as it did; the backup pops at its
			// rank.
			twinned(h, p, o, rel)
			handOver(h, b, 1)
		}},
		{ExSharedID, "G4", func(h *History, p, b, o string, rel bool) {
			// The create first went out under an ID that collided; the
			// proxy wrote it again under placedTimer, and the primary
			// popped the first copy before its withdrawal arrived.
			first := uint64(placedTimer + 7)
			twinned(h, p, o, rel)
			early := pop(1010*ms, p, "a", 1)
			early.Timer = first
			h.Pops = append([]Pop{early}, h.Pops...)
		}},
		{ExSharedID, "G2", func(h *History, p, b, o string, rel bool) {
			// The backup, a twin, holds another timer under the ID, so when the
			// primary's callback of pop 3 is refused, nobody makes pop
			// 3; the primary goes on with pop 4. Moved: the collision
			// was another timer's, and the backup should have popped 3
			// at its rank.
			twinned(h, b, o, rel)
			h.Faults = []Fault{{At: 2900 * ms, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
				{At: 3500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}}}
			h.Pops[2].Answered = 500
		}},
		{ExLinTaint, "G5", func(h *History, p, b, o string, rel bool) {
			// A delete whose request to the backup is lost: the backup
			// pops once more at its rank (its notice then meets the
			// tombstone and repairs it), and the porcupine model leaves
			// out the delete of unknown outcome that follows it (the one
			// the fault hit is named by the fault). Moved: the lost
			// request was another timer's.
			h.Ops = append(h.Ops, del(2, placedTimer, 4500*ms, 4510*ms, OK), del(3, placedTimer, 11*sec, 0, Unknown))
			h.Ops[1].Node, h.Ops[2].Node = p, p
			h.Faults = []Fault{{At: 4501 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: pickTimer(rel)}}
			h.Pops = h.Pops[:4]
			s := pop(5*sec+2*sec+20*ms, b, "a", 5)
			s.Timer = placedTimer
			h.Pops = append(h.Pops, s)
		}},
	}
	for _, c := range cases {
		t.Run(string(c.excuse), func(t *testing.T) {
			h, p, b, o := placed(t)
			c.build(h, p, b, o, true)
			vs, cov := DefaultOptions().Judge(h)
			requireNone(t, vs)
			if cov.Excused[c.excuse] == 0 {
				t.Errorf("excuse %s covered nothing: got %v", c.excuse, cov.Excused)
			}
			h, p, b, o = placed(t)
			c.build(h, p, b, o, false)
			requireHas(t, Check(h), c.want)
		})
	}
}

// TestCrashTakesNoCopyWithStorage proves that with storage a crash
// excuses no lost copy: the history copies-lost excuses without storage
// (the only holder crashes and restarts) is a G2 violation with it, and
// copies-lost is never the excuse.
func TestCrashTakesNoCopyWithStorage(t *testing.T) {
	for _, storage := range []bool{false, true} {
		h, p, b, _ := placed(t)
		h.Storage = storage
		h.Faults = []Fault{{At: 5 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: placedTimer},
			{At: 100 * ms, Kind: Crash, Nodes: []string{p}}, {At: 200 * ms, Kind: Restart, Nodes: []string{p}}}
		h.Pops = nil
		vs, cov := DefaultOptions().Judge(h)
		if !storage {
			requireNone(t, vs)
			continue
		}
		requireHas(t, vs, "G2")
		if cov.Excused[ExCopiesLost]+cov.Excused[ExDiskLost] != 0 {
			t.Errorf("with storage a crash excused lost copies: %v", cov.Excused)
		}
	}
}

// relay is the node the second site's address names.
func relay(sites [][]string) string { return sites[1][0] }

// twinned makes a and b the plan's twins, writing at the millisecond
// placedTimer carries (b a create of another timer, answered 503):
// related, their number is the one the ID carries, so the twins may have
// issued it twice; unrelated, another number.
func twinned(h *History, a, b string, related bool) {
	h.Epoch = time.UnixMilli(idEpochMs + int64(placedTimer>>(idSeqBits+idInstanceBits)))
	h.Twins, h.TwinInstances = []string{a, b}, []int{idInstance(placedTimer) - 1}
	if related {
		h.TwinInstances[0]++
	}
	other := write(len(h.Ops)+1, Create, 0, "twin", sec, 10*sec, 0, 20*ms, Unknown)
	other.Node = b
	h.Ops = append(h.Ops, other)
}

func pick(related bool, yes, no string) string {
	if related {
		return yes
	}
	return no
}

func pickTimer(related bool) uint64 {
	if related {
		return placedTimer
	}
	return placedTimer + 1
}

// TestHealthyRunIsJudgedStrictly shows a fault-free history is held to
// every guarantee in full, and a fault on a member holding no replica of
// the timer changes none of that.
func TestHealthyRunIsJudgedStrictly(t *testing.T) {
	h, _, _, other := placed(t)
	for _, faults := range [][]Fault{nil, {{At: 2 * sec, Kind: Crash, Nodes: []string{other}},
		{At: 3 * sec, Kind: Partition, Nodes: []string{other}, Peers: []string{"client"}}}} {
		h.Faults = faults
		vs, cov := DefaultOptions().Judge(h)
		requireNone(t, vs)
		for _, g := range []string{"G2", "G3", "G4"} {
			if s := cov.Share(g, Safety); s != 1 {
				t.Errorf("faults %v: %s judged %.2f of due pops, want all (excused: %v)", faults, g, s, cov.Excused)
			}
		}
		if cov.WriteShare() != 1 || cov.Due[Safety] != 10 {
			t.Errorf("faults %v: got %d due pops and G5 on %.2f of writes, want 10 and all", faults, cov.Due[Safety], cov.WriteShare())
		}
	}
}

// TestPorcupineOutOfStepsIsNeverAPass shows that a timer whose
// linearizability search ran out of its budget of model steps is reported
// as a CHECK violation, not passed, and that the budget is counted in
// steps: the same history within the default budget passes, and the
// count it reports does not change from one run to the next.
func TestPorcupineOutOfStepsIsNeverAPass(t *testing.T) {
	vs := linViolations(LinearizabilityInfo{Result: porcupine.Unknown, Note: "no answer"}, 9*sec)
	if len(vs) != 1 || vs[0].Guarantee != "CHECK" || vs[0].At != 9*sec {
		t.Fatalf("got %s, want one CHECK violation at 9s", dump(vs))
	}
	if vs := linViolations(LinearizabilityInfo{Result: porcupine.Ok}, 9*sec); len(vs) != 0 {
		t.Fatalf("got %s for a finished search, want none", dump(vs))
	}
	h := healthy()
	_, info := DefaultOptions().Linearizable(h)
	if info.Result != porcupine.Ok || info.MostSteps < 2 {
		t.Fatalf("default budget: got %s after %d steps, want ok after at least 2", info.Result, info.MostSteps)
	}
	for range 3 {
		if _, again := DefaultOptions().Linearizable(h); again.MostSteps != info.MostSteps {
			t.Fatalf("steps: got %d, then %d; want the same count every run", info.MostSteps, again.MostSteps)
		}
	}
	o := DefaultOptions()
	o.LinearizabilitySteps = info.MostSteps - 1
	vs, _ = o.Judge(h)
	requireHas(t, vs, "CHECK", "ran out of its")
	o.LinearizabilitySteps = info.MostSteps
	vs, _ = o.Judge(h)
	requireNone(t, vs)
}

// TestSitesPlaceEachTimerInBoth shows the placement of a timer over two
// sites: the replica of the site that took the write first, then the other
// site's, a site's ranks later. The other site's replica taking over when
// the first crashed passes; taking over with no fault is late (G3); and a
// pause of the node that relays to the other site touches the timer.
func TestSitesPlaceEachTimerInBoth(t *testing.T) {
	sites := [][]string{{"n1", "n2"}, {"n3", "n4"}}
	home, away := Replicas(sites[0], placedTimer, 1)[0], Replicas(sites[1], placedTimer, 1)[0]
	if away == sites[1][0] {
		// The relay is not the other site's replica, so that a fault on
		// it touches the timer only as a relay.
		sites[1][0], sites[1][1] = sites[1][1], sites[1][0]
	}
	build := func(faults []Fault) *History {
		h := &History{
			Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
			Ops: []Op{write(1, Create, placedTimer, "a", sec, 5*sec, 0, 10*ms, OK)},
			End: 15 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms, Faults: faults,
		}
		h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, 1
		for k := 1; k <= 5; k++ {
			p := pop(time.Duration(k)*sec+2*sec+20*ms, away, "a", k)
			p.Timer = placedTimer
			h.Pops = append(h.Pops, p)
		}
		return h
	}
	requireNone(t, Check(build([]Fault{{At: 500 * ms, Kind: Crash, Nodes: []string{home}}})))
	requireHas(t, Check(build(nil)), "G3")
	// The forward to the other site is lost on its way to the relay, so
	// the other site never holds the timer: when the home replica's pop
	// 1 is refused, nobody pops it; the home replica goes on with pop 2.
	// Lost to a node of no role, pop 1 is G2.
	for _, lostTo := range []string{relay(sites), "n9"} {
		h := build([]Fault{{At: 5 * ms, Kind: Lost, Nodes: []string{home}, Peers: []string{lostTo}, Timer: placedTimer},
			{At: 900 * ms, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
			{At: 1500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}}})
		refused := pop(sec+20*ms, home, "a", 1)
		refused.Timer, refused.Answered = placedTimer, 500
		h.Pops = append([]Pop{refused}, pops(home, "a", 2, 3, 0)...)
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		h.End = 3500 * ms
		if vs := Check(h); lostTo == "n9" {
			requireHas(t, vs, "G2")
		} else {
			requireNone(t, vs)
		}
	}
	// The home replica pops; its notice of pop 3 to the other site is
	// held by the relay's pause, so the other site pops 3 too.
	relayNode := relay(sites)
	for _, paused := range []string{relayNode, "n9"} {
		h := build([]Fault{{At: 2500 * ms, Kind: Pause, Nodes: []string{paused}}, {At: 4 * sec, Kind: Resume, Nodes: []string{paused}}})
		h.Pops = append(pops(home, "a", 1, 5, 0), pop(3*sec+2*sec+20*ms, away, "a", 3))
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		vs := Check(h)
		if paused == relayNode {
			requireNone(t, vs)
		} else {
			requireHas(t, vs, "G4")
		}
	}
}

// TestSitesWriteLagAndQuorum covers what sets a two-site history apart:
// another site places a write after the client has its answer (the
// site-lag excuse), and a write is acknowledged by its own site alone, so
// that a site's quorum, not the whole placement's, holds it.
func TestSitesWriteLagAndQuorum(t *testing.T) {
	sites, home, away := twoSitesRelayNoReplica()
	base := func(rf int, faults []Fault) *History {
		h := &History{
			Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
			Ops: []Op{write(1, Create, placedTimer, "a", sec, 20*sec, 0, 10*ms, OK)},
			End: 30 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms, Faults: faults,
			LivenessFrom: 8 * sec,
		}
		h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, rf
		return h
	}
	// A delete returns at 2.51 s; the relay's replication of it to the
	// other site's replica is lost just after, so that replica pops the
	// deleted timer once more at its rank, long after the fault, which no
	// lateness bound holds, before its notice meets the tombstone. Lost
	// later than SiteLag after the answer, it is a violation.
	for _, after := range []time.Duration{ms, SiteLag + 500*ms} {
		h := base(1, []Fault{{At: 2510*ms + after, Kind: Lost, Nodes: []string{relay(sites)}, Peers: []string{away}, Timer: placedTimer}})
		h.Ops = append(h.Ops, del(2, placedTimer, 2500*ms, 2510*ms, OK))
		h.Ops[1].Node = home
		h.Pops = pops(home, "a", 1, 2, 0)
		h.Pops = append(h.Pops, pop(3*sec+2*sec+20*ms, away, "a", 3))
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		vs, cov := DefaultOptions().Judge(h)
		if after == ms {
			requireNone(t, vs)
			if cov.Excused[ExSiteLag] == 0 {
				t.Errorf("site-lag covered nothing: got %v", cov.Excused)
			}
		} else {
			requireHas(t, vs, "G5")
		}
	}
	// The same delete's forward reaches the other site's relay at once
	// and waits in its inbound queue: the relay took it that late, and
	// the other site's pop of the deleted timer due meanwhile is no
	// violation, within SiteLag after the answer or past it (U35). A pop
	// due once the relay took it is: the site held the delete.
	// queuedDelete is a delete through home returning at 2.51 s, a
	// message of it from one node to another waiting in its receiver's
	// inbound queue, and the other site's replica's pop seq at its rank.
	queuedDelete := func(at time.Duration, from, to string, wait time.Duration, seq int) *History {
		h := base(1, []Fault{{At: at, Kind: Queued, Nodes: []string{from}, Peers: []string{to},
			Detail: OverloadWaited + wait.String() + OverloadRecord, Timer: placedTimer}})
		h.Ops = append(h.Ops, del(2, placedTimer, 2500*ms, 2510*ms, OK))
		h.Ops[1].Node = home
		h.Pops = pops(home, "a", 1, 2, 0)
		h.Pops = append(h.Pops, pop(time.Duration(seq)*sec+2*sec+20*ms, away, "a", seq))
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		return h
	}
	for _, wait := range []time.Duration{SiteLag + 500*ms, SiteLag / 2, 0} {
		for _, seq := range []int{3, 4} {
			vs, cov := DefaultOptions().Judge(queuedDelete(2505*ms, home, relay(sites), wait, seq))
			switch {
			case wait > SiteLag || wait > 0 && seq == 3:
				requireNone(t, vs)
				if cov.Excused[ExSiteLag] == 0 {
					t.Errorf("wait %v, pop %d: site-lag covered nothing: got %v", wait, seq, cov.Excused)
				}
			default:
				requireHas(t, vs, "G5")
			}
		}
	}
	// The relay takes the forward at once and passes it on to its site's
	// replica, where it waits: that replica took the delete when the wait
	// ended (U35). A wait of a message to a node of the write's own site
	// moves no other site's limit.
	for _, to := range []string{away, home} {
		for _, seq := range []int{3, 4} {
			from := relay(sites)
			if to == home {
				from = away
			}
			if vs := Check(queuedDelete(2520*ms, from, to, SiteLag/2, seq)); to == away && seq == 3 {
				requireNone(t, vs)
			} else {
				requireHas(t, vs, "G5")
			}
		}
	}
	// The relay stands still while the create is on its way to the other
	// site, whose replica so gets it 3 s late and pops that late once the
	// home replica has crashed. A pause of a node of no role holds
	// nothing: the other site then owes the pop at its rank.
	for _, paused := range []string{relay(sites), "n9"} {
		h := base(1, []Fault{{At: 0, Kind: Pause, Nodes: []string{paused}}, {At: 3 * sec, Kind: Resume, Nodes: []string{paused}},
			{At: 500 * ms, Kind: Crash, Nodes: []string{home}}})
		h.Ops[0].Spec.RepeatFor = sec
		late := pop(6*sec+20*ms, away, "a", 1)
		late.Timer = placedTimer
		h.Pops = []Pop{late}
		if vs := Check(h); paused == "n9" {
			requireHas(t, vs, "G3")
		} else {
			requireNone(t, vs)
		}
	}
	// rf 2 in each site: the create is acknowledged by one of the home
	// site's two replicas, and its forward to the other site is lost.
	// Both home replicas' callbacks for pops 1 to 3 fail, or succeed at
	// the backup's rank once the endpoint is back; the primary makes the
	// rest. Lost to a node of no role, the other site holds the timer
	// and owes pop 1.
	for _, lostTo := range []string{relay(sites), "n9"} {
		h := base(2, []Fault{{At: 5 * ms, Kind: Lost, Nodes: []string{home}, Peers: []string{lostTo}, Timer: placedTimer},
			{At: 900 * ms, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
			{At: 3500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}}})
		replicas := Replicas(sites[0], placedTimer, 2)
		for k := 1; k <= 3; k++ {
			for i, n := range replicas {
				p := pop(time.Duration(k+2*i)*sec+20*ms, n, "a", k)
				p.Timer = placedTimer
				if p.At < 3500*ms {
					p.Answered = 500
				}
				h.Pops = append(h.Pops, p)
			}
		}
		h.Pops = append(h.Pops, pops(replicas[0], "a", 4, 20, 0)...)
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		if vs := Check(h); lostTo == "n9" {
			requireHas(t, vs, "G2")
		} else {
			requireNone(t, vs)
		}
	}
}

// TestOtherSiteWaitsForEveryLocalRank proves the other sites' part of
// G4's rank order: with both replicas of the write's site crashed, the
// other site's replica pops at its turn, after both local ranks (4 s
// after due), and popping at the local backup's turn (2 s) is G4 even
// though no duplicate shows it; a forward jump of its clock by 2 s makes
// that pop no earlier than its own clock allows, and passes.
func TestOtherSiteWaitsForEveryLocalRank(t *testing.T) {
	sites := [][]string{{"n1", "n2"}, {"n3", "n4"}}
	local := Replicas(sites[0], placedTimer, 2)
	away := Replicas(sites[1], placedTimer, 2)[0]
	for _, c := range []struct {
		name   string
		after  time.Duration // the other site's pops, after due
		jumped bool
		want   string
	}{
		{"at its turn", 4*sec + 20*ms, false, ""},
		{"at the local backup's turn", 2*sec + 20*ms, false, "G4"},
		{"at the local backup's turn, its clock 2 s ahead", 2*sec + 20*ms, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
				Ops: []Op{write(1, Create, placedTimer, "a", 10*sec, 40*sec, 0, 10*ms, OK)},
				End: 50 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
				Faults: []Fault{{At: 500 * ms, Kind: Crash, Nodes: []string{local[0]}}, {At: 500 * ms, Kind: Crash, Nodes: []string{local[1]}}},
			}
			h.Ops[0].Node = local[0]
			if c.jumped {
				h.Faults = append(h.Faults, Fault{At: sec, Kind: ClockJump, Nodes: []string{away}, Detail: "+2s"})
			}
			for k := 1; k <= 4; k++ {
				p := pop(time.Duration(k)*10*sec+c.after, away, "a", k)
				p.Timer = placedTimer
				h.Pops = append(h.Pops, p)
			}
			requireWant(t, Check(h), c.want, "another site", "turn")
		})
	}
}

// TestOtherSiteTurnIsWithinTheWorstRank: G3's and G7's worst rank with
// sites is the last replica of the last site, not the factor's last, for
// a write whose factor the history leaves to the node as for one that
// gives it: with both replicas of the write's site crashed (no storage)
// and the faults healed, the other site's first replica pops at its turn,
// 4 s after due, in the liveness phase, and passes; past every turn is
// G7. Fresh seed 9314195 held such a pop, of an update without a factor,
// to one site's ranks.
func TestOtherSiteTurnIsWithinTheWorstRank(t *testing.T) {
	sites := [][]string{{"n1", "n2"}, {"n3", "n4"}}
	local := Replicas(sites[0], placedTimer, 2)
	away := Replicas(sites[1], placedTimer, 2)[0]
	for _, c := range []struct {
		name  string
		after time.Duration
		rf    int
		want  string
	}{
		{"at its turn", 4*sec + 20*ms, 2, ""},
		{"at its turn, the factor the node's", 4*sec + 20*ms, 0, ""},
		{"past every turn", 6*sec + 500*ms, 2, "G7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
				Ops: []Op{
					write(1, Create, placedTimer, "a", 10*sec, 10*sec, 0, 10*ms, OK),
					write(2, Update, placedTimer, "b", 60*sec, 60*sec, 20*sec, 20*sec+10*ms, OK),
				},
				End: 200 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms, LivenessFrom: 30 * sec,
				Faults: []Fault{
					{At: 25 * sec, Kind: Crash, Nodes: []string{local[0]}}, {At: 25 * sec, Kind: Crash, Nodes: []string{local[1]}},
					{At: 30 * sec, Kind: Restart, Nodes: []string{local[0]}}, {At: 30 * sec, Kind: Restart, Nodes: []string{local[1]}},
				},
			}
			h.Ops[0].Node, h.Ops[1].Node = local[0], local[0]
			h.Ops[1].Spec.ReplicationFactor = c.rf
			if c.rf == 0 {
				h.Ops[0].Spec.ReplicationFactor = 1 // ended: the update takes 1 or the default, 2
			}
			first := pop(10*sec+20*ms, local[0], "a", 1)
			first.Timer = placedTimer
			p := pop(80*sec+c.after, away, "b", 1)
			p.Timer = placedTimer
			h.Pops = append(h.Pops, first, p)
			requireWant(t, Check(h), c.want, "pop 1")
		})
	}
}

// TestClockStepAtTheSkewMarginIsDecided pins where a clock step becomes
// a fault: a backup whose clock moved ahead pops its rank that much
// sooner, and the checker excuses the duplicate only once the step is
// more than the skew leaves after a healthy pop's slack (spreadMargin:
// 2 s - 100 ms - 2 x 5 ms = 1.89 s). At exactly the margin the backup
// pops at the end of the primary's healthy window, by when the
// primary's notice has reached it, so a duplicate there is G4; one
// millisecond more, or a step of the whole skew, touches the timer.
func TestClockStepAtTheSkewMarginIsDecided(t *testing.T) {
	for _, c := range []struct {
		step time.Duration
		want string
	}{
		{1890 * ms, "G4"},
		{1891 * ms, ""},
		{2 * sec, ""},
	} {
		t.Run(c.step.String(), func(t *testing.T) {
			h, _, b, _ := placed(t)
			h.Faults = []Fault{{At: 1500 * ms, Kind: ClockJump, Nodes: []string{b}, Detail: "+" + c.step.String()}}
			dup := pop(2*sec+2*sec-c.step+20*ms, b, "a", 2)
			dup.Timer = placedTimer
			h.Pops = append(h.Pops, dup)
			requireWant(t, Check(h), c.want, "pop 2")
		})
	}
}

// TestCutFromTheRelayKeepsAWriteFromItsSite holds the link from the other
// site's relay to that site's replica from before an update until after
// the replica's next pop: the update reached the relay, never the
// replica, which pops the old definition at its rank meanwhile. A write
// reaches another site through its relay, so a cut from the relay kept
// it from that site (cutFromTimer), and the pop is excused; the same cut
// from a node of no role keeps nothing, and the pop is G5.
func TestCutFromTheRelayKeepsAWriteFromItsSite(t *testing.T) {
	sites, home, away := twoSitesRelayNoReplica()
	for _, from := range []string{relay(sites), "n9"} {
		h := &History{
			Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
			Ops: []Op{write(1, Create, placedTimer, "a", sec, 20*sec, 0, 10*ms, OK),
				write(2, Update, placedTimer, "b", sec, 20*sec, 2500*ms, 2510*ms, OK)},
			End: 30 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms, LivenessFrom: 12 * sec,
			Faults: []Fault{{At: 2 * sec, Kind: Clog, Nodes: []string{from}, Peers: []string{away}, Detail: "hold"},
				{At: 10 * sec, Kind: Heal}},
		}
		for i := range h.Ops {
			h.Ops[i].Node, h.Ops[i].Spec.ReplicationFactor = home, 1
		}
		h.Pops = append(pops(home, "a", 1, 2, 0), pops(home, "b", 1, 20, 2500*ms)...)
		h.Pops = append(h.Pops, pop(3*sec+2*sec+20*ms, away, "a", 3))
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		if vs := Check(h); from == "n9" {
			requireHas(t, vs, "G5")
		} else {
			requireNone(t, vs)
		}
	}
}

// TestReplicaCrashedInTheLivenessPhaseIsUnable proves G7 weighs a crash
// the plan makes in the liveness phase itself (a restart in the middle of
// a scale's resync): an rf 1 timer's replica, down from 5.5 s to 7.5 s,
// makes pops 6 and 7 at its restart from disk, late and excused; the same
// late pops with another node down are late (G3: no fault touched them).
func TestReplicaCrashedInTheLivenessPhaseIsUnable(t *testing.T) {
	for _, replicaDown := range []bool{true, false} {
		h, p, _, other := placed(t)
		h.Ops[0].Spec.ReplicationFactor = 1
		h.Storage, h.LivenessFrom = true, 3*sec
		down := other
		if replicaDown {
			down = p
		}
		h.Faults = []Fault{{At: 5500 * ms, Kind: Crash, Nodes: []string{down}}, {At: 7500 * ms, Kind: Restart, Nodes: []string{down}}}
		h.Pops[5].At, h.Pops[6].At = 7502*ms, 7503*ms
		vs, cov := DefaultOptions().Judge(h)
		if !replicaDown {
			requireHas(t, vs, "G3", "pop 6")
			continue
		}
		requireNone(t, vs)
		if cov.Excused[ExAllDown] == 0 {
			t.Errorf("all-replicas-down excused nothing: %v", cov.Excused)
		}
	}
}

// TestShedCallbackIsItsReplicasFailedAttempt is fresh seed 5012888 (G7;
// scenarios/README.md C49): in the liveness phase the only replica
// holding the timer (the others restarted empty) made a pop whose
// callback its overloaded send queue shed. The node counts that a failed
// callback (docs/design.md 4.7: the copy keeps its schedule, the pop is
// not tried again), as it does a callback the network lost, so with no
// other replica able the pop is excused (all replicas unable). Here the
// timer has two replicas and the backup is down at the pop. The shed
// names its pop: the same shed of another pop, by a node holding no
// replica, or one that names no pop excuses nothing. Nor does a shed by
// the last replica (here the one replica of a timer of factor 1): a
// node sheds a pop only to leave it to a later holder (node/pop.go
// handOnAfter), so the last one's pop waits for its CPU, and a shed of
// it is the pop given up (the mutation `last-replica-hands-on`): in the
// liveness phase (G7) and in the safety phase (G2) alike, where the
// shed once counted its sender as down (scenarios/README.md C63).
func TestShedCallbackIsItsReplicasFailedAttempt(t *testing.T) {
	for _, c := range []struct {
		name   string
		rf     int
		shedBy string // "p": the primary, "other": a node holding none, "": no shed
		detail string
		want   string
	}{
		{"the replica shed the pop's callback", 2, "p", ShedDetail + " " + CallbackDetail + "6", ""},
		{"no shed", 2, "", "", "G7"},
		{"the replica shed another pop's callback", 2, "p", ShedDetail + " " + CallbackDetail + "5", "G7"},
		{"a node holding no replica shed it", 2, "other", ShedDetail + " " + CallbackDetail + "6", "G7"},
		{"a shed naming no pop", 2, "p", ShedDetail, "G7"},
		{"the last replica shed the pop's callback", 1, "p", ShedDetail + " " + CallbackDetail + "6", "G7"},
		{"the last replica shed the pop's callback in the safety phase", 1, "p", ShedDetail + " " + CallbackDetail + "6", "G2"},
	} {
		h, p, b, other := placed(t)
		h.Ops[0].Spec.ReplicationFactor = c.rf
		h.LivenessFrom = 3 * sec
		if c.want == "G2" {
			h.LivenessFrom = 0 // no liveness phase: G2 judges every pop
		}
		h.Pops = slices.Delete(h.Pops, 5, 6) // pop 6
		h.Faults = nil
		if c.rf > 1 {
			h.Faults = append(h.Faults, Fault{At: 5500 * ms, Kind: Crash, Nodes: []string{b}})
		}
		by := map[string]string{"p": p, "other": other}[c.shedBy]
		if by != "" {
			h.Faults = append(h.Faults, Fault{At: 6 * sec, Kind: Overload, Nodes: []string{by}, Peers: []string{"client"},
				Timer: placedTimer, Detail: c.detail})
		}
		if c.rf > 1 {
			h.Faults = append(h.Faults, Fault{At: 9 * sec, Kind: Restart, Nodes: []string{b}})
		}
		vs, cov := DefaultOptions().Judge(h)
		if c.want != "" {
			requireHas(t, vs, c.want, "pop 6", "never delivered")
			continue
		}
		requireNone(t, vs)
		if cov.Excused[ExAllFailed]+cov.Excused[ExAllDown] == 0 {
			t.Errorf("%s: no replica counted unable: %v", c.name, cov.Excused)
		}
	}
}

// TestCallbackThatLeftIntoACutIsItsReplicasFailedAttempt: the one
// replica of a timer of factor 1 made pop 6 on time, its callback waited
// 1.5 s for its overloaded sender, and left into a cut from the endpoint
// that began after the pop's window: the pop was made and failed, once,
// and nobody owes it (ExAllFailed). A cut that began after the callback
// left, or a wait of another pop's callback, excuses nothing (fresh seed
// 9732728, scenarios/README.md C80).
func TestCallbackThatLeftIntoACutIsItsReplicasFailedAttempt(t *testing.T) {
	for _, c := range []struct {
		name   string
		detail string        // the Overload fault's ("": none)
		cut    time.Duration // when the cut from the endpoint began
		want   string
	}{
		{"left into the cut", OverloadWaited + "1.5s " + CallbackDetail + "6", 7 * sec, ""},
		{"left before the cut", OverloadWaited + "1.5s " + CallbackDetail + "6", 7600 * ms, "G2"},
		{"another pop's callback waited", OverloadWaited + "1.5s " + CallbackDetail + "5", 7 * sec, "G2"},
		{"no wait", "", 7 * sec, "G2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, _, _ := placed(t)
			h.Ops[0].Spec.ReplicationFactor = 1
			h.LivenessFrom = 0                   // no liveness phase: G2 judges every pop
			h.Pops = slices.Delete(h.Pops, 5, 6) // pop 6
			h.Faults = nil
			if c.detail != "" {
				h.Faults = append(h.Faults, Fault{At: 6 * sec, Kind: Overload, Nodes: []string{p}, Peers: []string{"client"},
					Timer: placedTimer, Detail: c.detail})
			}
			h.Faults = append(h.Faults, Fault{At: c.cut, Kind: Partition, Nodes: []string{p}, Peers: []string{"client"}}, Fault{At: 9 * sec, Kind: Heal})
			vs, cov := DefaultOptions().Judge(h)
			if c.want != "" {
				requireHas(t, vs, c.want, "pop 6", "never delivered")
				return
			}
			requireNone(t, vs)
			if cov.Excused[ExAllFailed] == 0 {
				t.Errorf("the replica not counted as failed: %v", cov.Excused)
			}
		})
	}
}

// TestSitesRelayRefusingItsOwnCopy is the shape of a fresh seed of the
// sites and storage mixes (G2): rf 2 in each site, every node full but
// the write's primary. The home backup refuses its copy at its limit, and
// the other site's relay refuses its own copy as it places the forward
// (recorded as a lost request from itself to itself, sim/refusal.go
// ownRefusal) and its replication to its site's other replica is refused
// too; the endpoint refuses every pop from the primary, the only holder:
// all-replicas-failed. Without the relay's refusal the relay holds a copy
// and owes the pops; the same refusal on a node of no role takes no
// copy; and a relay that refused only its own copy still placed the
// forward on its site's other replica, which owes the pops: an own
// refusal is no forward the site missed.
func TestSitesRelayRefusingItsOwnCopy(t *testing.T) {
	sites := [][]string{{"n1", "n2"}, {"n3", "n4"}}
	local := Replicas(sites[0], placedTimer, 2)
	rel, other := relay(sites), sites[1][1]
	for _, c := range []struct {
		name     string
		own      string // the node that refused its own copy ("": none)
		siteLost bool   // the relay's replication to other refused too
		want     string
	}{
		{"relay refused its own copy", rel, true, ""},
		{"relay took its copy", "", true, "G2"},
		{"a node of no role refused its own", "n9", true, "G2"},
		{"relay refused only its own copy", rel, false, "G2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
				Ops: []Op{write(1, Create, placedTimer, "a", 3*sec, 9*sec, 0, 10*ms, OK)},
				End: 60 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
				Faults: []Fault{
					{At: 0, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
					{At: 4 * ms, Kind: Lost, Nodes: []string{local[0]}, Peers: []string{local[1]}, Timer: placedTimer, Detail: "refused at its limit", Age: 2 * ms},
				},
			}
			h.Ops[0].Node = local[0]
			if c.own != "" {
				h.Faults = append(h.Faults, Fault{At: 3 * ms, Kind: Lost, Nodes: []string{c.own}, Peers: []string{c.own}, Timer: placedTimer,
					Detail: "refused its own copy at its limit", Age: 1 * ms})
			}
			if c.siteLost {
				h.Faults = append(h.Faults, Fault{At: 5 * ms, Kind: Lost, Nodes: []string{rel}, Peers: []string{other}, Timer: placedTimer,
					Detail: "refused at its limit", Age: 2 * ms})
			}
			for k := 1; k <= 3; k++ {
				p := pop(time.Duration(k)*3*sec+20*ms, local[0], "a", k)
				p.Timer, p.Answered = placedTimer, 503
				h.Pops = append(h.Pops, p)
			}
			vs, cov := DefaultOptions().Judge(h)
			requireWant(t, vs, c.want, "never delivered")
			if c.want == "" && cov.Excused[ExAllFailed] == 0 {
				t.Errorf("excuses %v, want %s", cov.Excused, ExAllFailed)
			}
		})
	}
}

// TestCallbackACrashTookWhileItWaited proves that a callback that waited
// for its overloaded sender, whose sender crashed before it left, was
// never sent: its replica made the pop and failed it, and with rf 1 the
// pop is lost, excused as all-replicas-down (scenarios/README.md C30,
// fresh seed 1100094: 59 pops of a burst lost so, the crash 0.9 s after
// their due times, past their bound). Bounded: a crash after the
// callback left, or a wait of another timer's callback, excuses nothing.
func TestCallbackACrashTookWhileItWaited(t *testing.T) {
	build := func(crash time.Duration, timer uint64) *History {
		h, p, _, _ := placed(t)
		h.Storage = true // the restart keeps the copy, and the pops go on
		h.Ops[0].Spec.ReplicationFactor = 1
		// Pop 3, made on time, waits 900 ms to be written.
		h.Faults = []Fault{{At: 3 * sec, Kind: Overload, Nodes: []string{p}, Peers: []string{"client"},
			Detail: OverloadWaited + "900ms", Timer: timer},
			{At: crash, Kind: Crash, Nodes: []string{p}}, {At: crash + 200*ms, Kind: Restart, Nodes: []string{p}}}
		h.Pops = slices.Delete(h.Pops, 2, 3)
		return h
	}
	vs, cov := DefaultOptions().Judge(build(3800*ms, placedTimer))
	requireNone(t, vs)
	if cov.Excused[ExAllDown] == 0 {
		t.Errorf("the lost callback was not excused as %s: got %v", ExAllDown, cov.Excused)
	}
	requireHas(t, Check(build(3950*ms, placedTimer)), "G2", "pop 3")
	requireHas(t, Check(build(3800*ms, placedTimer+1)), "G2", "pop 3")
}

// TestCallbackACrashTookOfAPopMadeAhead proves that a callback a crash
// took while it waited for its sender counts as its replica's failed
// attempt of the pop it carried, whenever it was made: a clock ahead
// makes pops long before their windows (scenarios/README.md C34, fresh
// seed 2100430: a clock 3m36s ahead made six pops of each of a burst's
// rf 1 timers at once, and the whole cluster's crash took the callbacks
// of pops 5 and 6 still queued; restarted from disk, the node read the
// attempts back). Bounded: a crash after the callback left, a callback
// of another pop, or of another timer, excuses nothing.
func TestCallbackACrashTookOfAPopMadeAhead(t *testing.T) {
	build := func(crash time.Duration, seq int, timer uint64) *History {
		h, p, _, _ := placed(t)
		h.Storage = true // the restart keeps the copy and the attempts made
		h.Ops[0].Spec.ReplicationFactor = 1
		// At 0.5 s p makes pop 9, due at 9 s (its clock ahead), whose
		// callback waits 900 ms to be written; the crash and its
		// settling end before the pop's window.
		h.Faults = []Fault{{At: 500 * ms, Kind: Overload, Nodes: []string{p}, Peers: []string{"client"},
			Detail: OverloadWaited + "900ms " + CallbackDetail + strconv.Itoa(seq), Timer: timer},
			{At: crash, Kind: Crash, Nodes: []string{p}}, {At: crash + 200*ms, Kind: Restart, Nodes: []string{p}}}
		h.Pops = slices.Delete(h.Pops, 8, 9)
		return h
	}
	vs, cov := DefaultOptions().Judge(build(sec, 9, placedTimer))
	requireNone(t, vs)
	if cov.Excused[ExAllFailed] == 0 {
		t.Errorf("the lost callback was not excused as %s: got %v", ExAllFailed, cov.Excused)
	}
	requireHas(t, Check(build(1600*ms, 9, placedTimer)), "G2", "pop 9")
	requireHas(t, Check(build(sec, 8, placedTimer)), "G2", "pop 9")
	requireHas(t, Check(build(sec, 9, placedTimer+1)), "G2", "pop 9")
}

// TestJoiningNodeHoldsOnlyWhatAMemberHandedIt proves a node that joins
// after a write holds no copy of it until a member that may hold one has
// taken the scaling configuration (joinedEmpty; scenarios/README.md
// C44): an rf 4 timer on three members, written at 0; a scale-up
// brings n4 at 5 s, and the three members crash at 4, 5 and 6 s, so
// every copy is gone at 6 s unless one of them handed n4 a copy, which
// takes a member that knows n4 (its reload of the scaling
// configuration) while it still held one. Needed: without the rule n4
// counts as a holder and every pop is owed (G2). Bounded: with the last
// member to crash reloading before its crash, n4 may hold the copy, and
// the pops after the scale are owed; a member that restarts before the last crash boots
// with the configuration but empty, and hands nothing.
func TestJoiningNodeHoldsOnlyWhatAMemberHandedIt(t *testing.T) {
	three := []string{"n1", "n2", "n3"}
	four := []string{"n1", "n2", "n3", "n4"}
	for _, c := range []struct {
		name     string
		reloaded map[string]time.Duration
		restart  bool // n1 restarts at 5.5 s, before the last crash
		want     string
	}{
		{"nobody handed it", nil, false, ""},
		{"a member restarted empty", nil, true, ""},
		{"a member reloaded after the last crash", map[string]time.Duration{"n1": 7 * sec}, true, ""},
		{"a holder reloaded", map[string]time.Duration{"n3": 5500 * ms}, false, "G2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: three,
				Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 60*sec, 0, 10*ms, OK)},
				Scales:  []Scale{{Kind: ScaleUp, Start: 5 * sec, End: 9 * sec, Before: three, After: four, Reloaded: c.reloaded}},
				Faults: []Fault{{At: 4 * sec, Kind: Crash, Nodes: []string{"n1"}},
					{At: 5 * sec, Kind: ScaleUp, Nodes: []string{"n4"}},
					{At: 5 * sec, Kind: Crash, Nodes: []string{"n2"}},
					{At: 6 * sec, Kind: Crash, Nodes: []string{"n3"}}},
				End: 80 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Spec.ReplicationFactor = 4
			if c.restart {
				h.Faults = append(h.Faults, Fault{At: 5500 * ms, Kind: Restart, Nodes: []string{"n1"}})
			}
			vs, cov := DefaultOptions().Judge(h)
			if c.want != "" {
				requireHas(t, vs, c.want, "pop 4")
				return
			}
			requireNone(t, vs)
			if cov.Excused[ExCopiesLost] == 0 {
				t.Errorf("copies-lost covered nothing: got %v", cov.Excused)
			}
		})
	}
}

// TestJoiningNodeIsNoHolderNorALostCopy proves a node that joined empty
// is left out of the nodes that may hold the timer, not counted as a
// copy lost (joinedEmpty): an rf 2 timer the scale-up of n4 at 5 s moves
// from [n1 n2] to [n1 n4]; n2 crashes at 5 s and n1, which has not
// reloaded, keeps its copy. Two of the three nodes that may hold it are
// without one, as many as its factor, yet n1 holds it, and the pops
// after the scale are owed (G2).
func TestJoiningNodeIsNoHolderNorALostCopy(t *testing.T) {
	const id = 0x0b061cf0001d7004
	three, four := []string{"n1", "n2", "n3"}, []string{"n1", "n2", "n3", "n4"}
	if !slices.Equal(Replicas(three, id, 2), []string{"n1", "n2"}) || !slices.Equal(Replicas(four, id, 2), []string{"n1", "n4"}) {
		t.Fatalf("placements %v, %v: want [n1 n2], [n1 n4]", Replicas(three, id, 2), Replicas(four, id, 2))
	}
	h := &History{
		Members: three,
		Ops:     []Op{write(1, Create, id, "a", 10*sec, 60*sec, 0, 10*ms, OK)},
		Scales:  []Scale{{Kind: ScaleUp, Start: 5 * sec, End: 9 * sec, Before: three, After: four}},
		Faults:  []Fault{{At: 5 * sec, Kind: ScaleUp, Nodes: []string{"n4"}}, {At: 5 * sec, Kind: Crash, Nodes: []string{"n2"}}},
		End:     80 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
	}
	vs, _ := DefaultOptions().Judge(h)
	requireHas(t, vs, "G2", "pop 4")
}
