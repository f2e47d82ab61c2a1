package sim

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
)

// The storm check: once the faults have healed, a node does not keep
// sending a peer the same message.
//
// A node sends a peer the same message again (the same method and URL,
// the same body but for the start delta a record is sent with, which
// moves with the sender's clock) for one of two reasons only: a retry of
// a send that failed, which a retry policy bounds (the longest, a resync
// page's, makes 8 tries whose waits sum to at most 91 s, plus their
// timeouts: about 131 s, five repair intervals), or a new reason to send
// it, which is work (a client write, a pop, a change of membership) or
// room a full peer freed (docs/design.md 4.6, repair). Neither recurs
// every repair interval with nothing changed: a repair round pushes a
// record only where the peer's differs, and not again once the peer
// said it has no room for it. A message sent again in most of the repair
// intervals of a stretch far longer than any retry policy lasts is a
// loop that nothing in the work explains: a message storm, which users
// pay for in CPU and bandwidth, and which the other checks cannot see
// (the messages change nothing, so every guarantee holds).
//
// The check watches the internal requests the nodes answer from the
// liveness phase on (sim.Plan.LivenessFrom: every fault has stopped),
// counts, per sender, receiver and message, the repair intervals
// (counted from the liveness phase) it was answered in, and fails the
// run (guarantee STORM) when one message was answered in StormSlots or
// more of any StormWindow consecutive intervals. Two things make a
// repeated message no storm, each named and counted in the report of a
// run that fails:
//
//   - overload: a repair interval in which the sender or the receiver
//     shed a send or kept one waiting (an overload fault, faults.go) is
//     not quiet, and counts for no message between them: a shed or late
//     send is a failed send, which repair retries by design, and a
//     generated load (MixLoad) may keep a cluster busy for hours.
//   - clock-apart: a repair interval in which a request between the
//     two was answered while their clocks (the simulator's) were apart
//     by more than MaxClockSkew is not quiet for them: such clocks act
//     as a cut link (docs/design.md 4.13), every request between them
//     is refused by age, and repair asks again as it does across any
//     cut. A clock step the plan makes after the liveness phase began
//     leaves them so for good.
//
// Two timers under one ID (twins of a shared instance number,
// MixSharedInstance, or a create versioned by a clock stepped ahead)
// are no excuse: repair sends a record its peer refused as a collision
// again only once either record changes (node/repaircollision.go;
// scenarios/README.md U27, which this check once excused as twin-id).
const (
	// StormWindow is the stretch the check looks at, in repair
	// intervals: ten minutes, four times the longest retry policy.
	StormWindow = 20
	// StormSlots is how many of a window's intervals one message may be
	// answered in before the run fails: more than a retry policy spans
	// (5) twice over, so two unrelated reasons to send one record again
	// within the window (a write's retries, then a repair after room
	// freed) stay well below it, while a loop of one repair round per
	// interval reaches the whole window.
	StormSlots = 12
)

// stormWatch collects what the storm check judges: per message, the
// repair intervals it was answered in; per sender, receiver and kind of
// message, how many were answered in each interval and how many refused.
type stormWatch struct {
	from, slot time.Duration
	msgs       map[stormKey]*stormMsg
	tally      map[stormTallyKey]*stormTally
	// apart holds, per sender, receiver and interval, that a request
	// between them was answered while their clocks were apart by more
	// than MaxClockSkew.
	apart map[stormTallyKey]bool
}

// stormKey names one message: sender, receiver, method, URL and a hash
// of its body (less the start delta).
type stormKey struct {
	from, to, method, url string
	body                  uint64
}

// stormMsg is what the watch keeps of one message.
type stormMsg struct {
	timer  uint64
	slots  []int64 // the intervals it was answered in, ascending, each once
	count  int
	status []stormStatus // how it was answered: each status once, in order of first answer
}

// stormStatus counts the answers of one status.
type stormStatus struct{ code, n int }

type stormTallyKey struct {
	from, to, kind string
	slot           int64
}

type stormTally struct{ n, refused int }

func newStormWatch(from, slot time.Duration) stormWatch {
	return stormWatch{from: from, slot: slot, msgs: map[stormKey]*stormMsg{}, tally: map[stormTallyKey]*stormTally{},
		apart: map[stormTallyKey]bool{}}
}

// stormServe records req, an internal request node to answered with
// resp, from the liveness phase on.
func (w *world) stormServe(to, from string, req node.Request, resp node.Response) {
	if w.plan.LivenessFrom == 0 || w.loop.Now() < w.plan.LivenessFrom || w.machineAt(from) == nil {
		return
	}
	if w.storm.msgs == nil {
		w.storm = newStormWatch(w.plan.LivenessFrom, nodeDefaults.RepairInterval)
	}
	apart := (w.machineAt(to).clock.Skew() - w.machineAt(from).clock.Skew()).Abs() > nodeDefaults.MaxClockSkew
	w.storm.served(w.loop.Now(), from, to, req, resp.Status, apart)
}

// served records one answered request.
func (s *stormWatch) served(at time.Duration, from, to string, req node.Request, status int, apart bool) {
	slot := int64((at - s.from) / s.slot)
	if apart {
		s.apart[stormTallyKey{from: from, to: to, slot: slot}] = true
		s.apart[stormTallyKey{from: to, to: from, slot: slot}] = true
	}
	k := stormKey{from: from, to: to, method: req.Method, url: req.URL, body: bodyHash(req.Body)}
	m := s.msgs[k]
	if m == nil {
		m = &stormMsg{timer: timerOfURL(req.URL)}
		s.msgs[k] = m
	}
	if n := len(m.slots); n == 0 || m.slots[n-1] != slot {
		m.slots = append(m.slots, slot)
	}
	m.count++
	if i := slices.IndexFunc(m.status, func(st stormStatus) bool { return st.code == status }); i >= 0 {
		m.status[i].n++
	} else {
		m.status = append(m.status, stormStatus{status, 1})
	}
	tk := stormTallyKey{from, to, req.Method + " " + stormKind(req.URL), slot}
	t := s.tally[tk]
	if t == nil {
		t = &stormTally{}
		s.tally[tk] = t
	}
	t.n++
	if status >= 400 {
		t.refused++
	}
}

// stormKind is a URL's path with a timer's ID written {id}: the kind of
// message it is.
func stormKind(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		url = url[i+3:]
		if j := strings.IndexByte(url, '/'); j >= 0 {
			url = url[j:]
		}
	}
	url, _, _ = strings.Cut(url, "?")
	if rest, ok := strings.CutPrefix(url, "/timers/"); ok && timerOfURL("/timers/"+rest) != 0 {
		return "/timers/{id}"
	}
	return url
}

// bodyHash hashes a request's body less the start delta of a record it
// carries, which moves with the sender's clock from one send of the same
// record to the next.
func bodyHash(b []byte) uint64 {
	h := fnv.New64a()
	delta := []byte(`"start-time-delta":`)
	for {
		i := bytes.Index(b, delta)
		if i < 0 {
			break
		}
		h.Write(b[:i])
		b = b[i+len(delta):]
		j := 0
		for j < len(b) && (b[j] == '-' || b[j] >= '0' && b[j] <= '9') {
			j++
		}
		b = b[j:]
	}
	h.Write(b)
	return h.Sum64()
}

// check returns a violation per sender and receiver that sent one
// message in StormSlots or more of StormWindow consecutive quiet
// intervals, with the window's figures; faults are the run's, whose
// overload faults make an interval not quiet for the nodes they name.
// excused counts the messages left out as no storm, by reason.
func (s *stormWatch) check(faults []checker.Fault) (vs []checker.Violation, excused map[string]int) {
	excused = map[string]int{}
	busy := map[string]map[int64]bool{}
	for _, f := range faults {
		if f.Kind != checker.Overload || f.At < s.from {
			continue
		}
		for _, n := range slices.Concat(f.Nodes, f.Peers) {
			if busy[n] == nil {
				busy[n] = map[int64]bool{}
			}
			busy[n][int64((f.At-s.from)/s.slot)] = true
		}
	}
	type pair struct{ from, to string }
	worst := map[pair]checker.Violation{}
	storms := map[pair]int{}
	// Most messages are answered once; only those that repeat as a
	// storm does are sorted, so that the violations come in one order.
	var keys []stormKey
	for k, m := range s.msgs {
		if _, hit := stormIn(m.slots); hit {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b stormKey) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	for _, k := range keys {
		m := s.msgs[k]
		quiet := slices.DeleteFunc(slices.Clone(m.slots), func(sl int64) bool { return busy[k.from][sl] || busy[k.to][sl] })
		if _, hit := stormIn(quiet); !hit {
			excused["overload"]++
			continue
		}
		quiet = slices.DeleteFunc(quiet, func(sl int64) bool { return s.apart[stormTallyKey{from: k.from, to: k.to, slot: sl}] })
		first, hit := stormIn(quiet)
		if !hit {
			excused["clock-apart"]++
			continue
		}
		p := pair{k.from, k.to}
		storms[p]++
		at := s.from + time.Duration(first)*s.slot
		if v, ok := worst[p]; !ok || at < v.At {
			worst[p] = checker.Violation{Guarantee: "STORM", At: at, Timer: m.timer, Message: s.describe(k, m, first)}
		}
	}
	for _, p := range slices.SortedFunc(maps.Keys(worst), func(a, b pair) int { return strings.Compare(a.from+a.to, b.from+b.to) }) {
		v := worst[p]
		if n := storms[p]; n > 1 {
			v.Message += fmt.Sprintf("; %d distinct messages from %s to %s repeated so", n, p.from, p.to)
		}
		vs = append(vs, v)
	}
	slices.SortStableFunc(vs, func(a, b checker.Violation) int { return int(a.At - b.At) })
	return vs, excused
}

// stormIn returns the first interval of the earliest window of
// StormWindow intervals that holds StormSlots or more of slots
// (ascending), if one does.
func stormIn(slots []int64) (int64, bool) {
	for i := 0; i+StormSlots <= len(slots); i++ {
		if slots[i+StormSlots-1]-slots[i] < StormWindow {
			return slots[i], true
		}
	}
	return 0, false
}

// describe says what repeated, in which window, and what the sender sent
// the receiver in that window, by kind.
func (s *stormWatch) describe(k stormKey, m *stormMsg, first int64) string {
	end := first + StormWindow
	in := 0
	for _, sl := range m.slots {
		if sl >= first && sl < end {
			in++
		}
	}
	from := s.from + time.Duration(first)*s.slot
	to := s.from + time.Duration(end)*s.slot
	var b strings.Builder
	fmt.Fprintf(&b, "%s sent %s the same %s %s in %d of the %d repair intervals (%v) from %v to %v (at most %d without a change or a failure: a message storm); answered %d times in the run (%s)",
		k.from, k.to, k.method, stormKind(k.url), in, StormWindow, s.slot, from, to, StormSlots-1, m.count, statusList(m.status))
	kinds := map[string]*stormTally{}
	for tk, t := range s.tally {
		if tk.from == k.from && tk.to == k.to && tk.slot >= first && tk.slot < end {
			sum := kinds[tk.kind]
			if sum == nil {
				sum = &stormTally{}
				kinds[tk.kind] = sum
			}
			sum.n += t.n
			sum.refused += t.refused
		}
	}
	fmt.Fprintf(&b, "; in that window %s sent %s:", k.from, k.to)
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprintf(&b, " %s %d (%d refused)", kind, kinds[kind].n, kinds[kind].refused)
	}
	return b.String()
}

func statusList(st []stormStatus) string {
	st = slices.Clone(st)
	slices.SortFunc(st, func(a, b stormStatus) int { return a.code - b.code })
	var parts []string
	for _, x := range st {
		parts = append(parts, fmt.Sprintf("%d x%d", x.code, x.n))
	}
	return strings.Join(parts, ", ")
}

// checkStorm runs the storm check on the run's watch: its violations
// join the simulator's own, its excuses go to res.
func (w *world) checkStorm(res *Result) {
	if w.storm.msgs == nil {
		return
	}
	var vs []checker.Violation
	vs, res.StormExcused = w.storm.check(w.hist.Faults)
	w.apiErrs = append(w.apiErrs, vs...)
}
