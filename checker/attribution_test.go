package checker

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// fullProduct is the list of the faults that touch d as attribute made it
// before the timeline's message faults were filed (commonSpans): every
// span of the timeline tested against d, then d's own, sorted by start.
func fullProduct(x *index, d *def) []*span {
	var out []*span
	sets := replicaSets{d: d}
	for i := range x.tl.spans {
		s := &x.tl.spans[i]
		switch {
		case !d.placed || x.affects(s.fault, d, sets.in(s.from, s.to)):
			out = append(out, s)
		case x.affects(s.fault, d, d.nodes):
			out = append(out, x.tl.writeOnly(i))
		}
	}
	out = appendSpans(out, d.moves)
	out = appendSpans(out, x.clockSpread(d))
	out = appendSpans(out, x.tl.byTimer[d.timer])
	if d.shared {
		out = append(out, &span{from: 0, to: never, end: x.end, fault: Fault{Kind: sharedIDFault, Detail: "the twins may have issued this ID twice"}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].from < out[j].from })
	return out
}

// genAttributed draws a history for attribution: a few members, maybe
// scales that add or remove one (ended or not), maybe several sites,
// writes of a few timers (some with no timer known, some of unknown
// outcome, some with a factor left to the node), and faults of every
// kind on random nodes, links and endpoints, many of them message faults
// naming no timer, many starting together or about a bound of a scale.
func genAttributed(t *rapid.T) *History {
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	members := nodes[:[]int{0, 3, 4, 5, 5}[rapid.IntRange(0, 4).Draw(t, "members")]]
	h := &History{MaxClockSkew: ms, MaxNetDelay: 5 * ms, End: 60 * sec, LivenessFrom: 30 * sec, Members: members}
	if len(members) >= 4 && rapid.IntRange(0, 4).Draw(t, "sites") == 0 {
		h.Sites = [][]string{members[:2], members[2:]}
	}
	for i := range []int{0, 1, 1, 2, 3}[rapid.IntRange(0, 4).Draw(t, "scales")] {
		if len(members) == 0 {
			break
		}
		start := time.Duration(rapid.IntRange(0, 50).Draw(t, "scaleAt")) * sec
		end := start + time.Duration(rapid.IntRange(1, 8).Draw(t, "scaleFor"))*sec
		if rapid.IntRange(0, 3).Draw(t, "scaleOpen") == 0 {
			end = 0
		}
		after := append(slices.Clone(members), nodes[len(members)])
		kind := ScaleUp
		before := members
		if i%2 == 1 {
			before, after, kind = after, members, ScaleDown
		}
		h.Scales = append(h.Scales, Scale{Kind: kind, Start: start, End: end, Before: before, After: after})
	}
	for seq := 1; seq <= rapid.IntRange(1, 6).Draw(t, "writes"); seq++ {
		timer := uint64([]int{0, 1, 2, 3, 1, 2, 3}[rapid.IntRange(0, 6).Draw(t, "timer")])
		at := time.Duration(rapid.IntRange(0, 50_000).Draw(t, "writeAt")) * ms
		out := []Outcome{OK, OK, Unknown, Failed}[rapid.IntRange(0, 3).Draw(t, "outcome")]
		kind := Create
		if seq > 1 && rapid.Bool().Draw(t, "update") {
			kind = Update
		}
		op := write(seq, kind, timer, fmt.Sprintf("w%d", seq), sec, 3*sec, at, at+time.Duration(rapid.IntRange(1, 900).Draw(t, "latency"))*ms, out)
		op.Node = nodes[rapid.IntRange(0, 5).Draw(t, "via")]
		op.Spec.ReplicationFactor = rapid.IntRange(0, 4).Draw(t, "rf")
		op.Spec.URI = fmt.Sprintf("http://c%d/cb", rapid.IntRange(1, 2).Draw(t, "endpoint"))
		h.Ops = append(h.Ops, op)
	}
	ends := nodes[:min(len(members)+1, len(nodes))]
	if rapid.Bool().Draw(t, "anyEnd") {
		ends = append(slices.Clone(nodes), "c1", "c2")
	}
	msgKinds := []FaultKind{Lost, Overload, Queued, Late, Duplicated, Reordered}
	otherKinds := []FaultKind{Crash, Pause, Partition, Clog, DiskFull, SlowCallback, FailCallback, ClockJump}
	at := time.Duration(0)
	for range rapid.IntRange(0, 120).Draw(t, "faults") {
		switch {
		case len(h.Scales) > 0 && rapid.Bool().Draw(t, "nearScale"):
			// About a bound of a scale's epochs (epochsOf).
			sc := rapid.SampledFrom(h.Scales).Draw(t, "scale")
			at = sc.Start
			if sc.End != 0 && rapid.Bool().Draw(t, "scaleEnd") {
				at = sc.End + FaultSettle
			}
			at += time.Duration(rapid.IntRange(-9000, 1000).Draw(t, "offBound")) * ms
		case !rapid.Bool().Draw(t, "together"):
			at = time.Duration(rapid.IntRange(0, 59_000).Draw(t, "faultAt")) * ms
		}
		f := Fault{At: at, Nodes: []string{rapid.SampledFrom(ends).Draw(t, "from")}, Peers: []string{rapid.SampledFrom(ends).Draw(t, "to")}}
		if rapid.IntRange(0, 3).Draw(t, "message") > 0 {
			f.Kind = rapid.SampledFrom(msgKinds).Draw(t, "msgKind")
			f.Age = time.Duration(rapid.IntRange(0, 3000).Draw(t, "age")) * ms
			if rapid.IntRange(0, 3).Draw(t, "named") == 0 {
				f.Timer = uint64(rapid.IntRange(1, 3).Draw(t, "faultTimer"))
			}
			if f.Kind == Overload || f.Kind == Queued {
				f.Detail = fmt.Sprintf("waited=%dms", rapid.IntRange(1, 2000).Draw(t, "wait"))
			}
		} else {
			f.Kind = rapid.SampledFrom(otherKinds).Draw(t, "kind")
			if f.Kind == ClockJump {
				f.Detail = "jumped 1s"
			}
		}
		h.Faults = append(h.Faults, f)
	}
	return h
}

func TestFiledAttributionEqualsTheFullProduct(t *testing.T) {
	// Property: the faults attribution gives each definition, the
	// timeline's message faults filed by class and held in lists
	// definitions share (commonSpans), are those the full product of
	// every timeline span and every definition gave, in the same order,
	// whatever the members, scales, sites, writes and faults; and so are
	// the waits it files by link (onLink).
	rapid.Check(t, func(t *rapid.T) {
		h := genAttributed(t)
		o := DefaultOptions()
		x := newIndex(h, o)
		for _, d := range x.defs {
			got, want := slices.Collect(d.spans()), fullProduct(x, d)
			sameSpans(t, d.op.Spec.Opaque+" spans", got, want)
			for _, f := range h.Faults {
				if f.Kind != Overload && f.Kind != Queued {
					continue
				}
				var onLink []*span
				for _, s := range want {
					if g := s.fault; g.Kind == f.Kind && len(g.Nodes) > 0 && len(g.Peers) > 0 && g.Nodes[0] == f.Nodes[0] && g.Peers[0] == f.Peers[0] {
						onLink = append(onLink, s)
					}
				}
				sameSpans(t, fmt.Sprintf("%s waits %s %s>%s", d.op.Spec.Opaque, f.Kind, f.Nodes[0], f.Peers[0]),
					slices.Collect(d.onLink(f.Kind, f.Nodes[0], f.Peers[0])), onLink)
			}
		}
	})
}

// sameSpans fails t unless got and want hold equal spans in one order.
func sameSpans(t *rapid.T, what string, got, want []*span) {
	if len(got) != len(want) {
		t.Fatalf("%s: got %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(*got[i], *want[i]) {
			t.Fatalf("%s, %d: got %+v, want %+v", what, i, *got[i], *want[i])
		}
	}
}
