package checker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// refusedEverywhere is placeHealthy's history with a second timer
// written after the first, and n lost messages about no known timer
// between the first timer's two replicas, a millisecond apart, as a clock
// jumped far ahead makes every message between two nodes refused: each
// touches every definition placed on both. It returns the faults the
// index stores as attributed: the lost messages once, in the list both
// definitions hold (commonSpans).
func refusedEverywhere(t *testing.T, n int) (*History, int) {
	t.Helper()
	h := healthy()
	replicas, _ := placeHealthy(h)
	second := h.Ops[0]
	second.Seq, second.Spec.Opaque, second.Invoke, second.Return = 2, "b", 20*ms, 30*ms
	h.Ops = append(h.Ops, second)
	h.Pops = append(h.Pops, pops(replicas[0], "b", 1, 5, 20*ms)...)
	for i := range n {
		h.Faults = append(h.Faults, Fault{At: time.Duration(i) * ms, Kind: Lost, Nodes: []string{replicas[0]},
			Peers: []string{replicas[1]}, Detail: "refused as dated 2m34s ago"})
	}
	x := newIndex(h, DefaultOptions())
	attributed, product := x.attributedCommon, 0
	for _, d := range x.defs {
		attributed += len(d.own)
		for range d.spans() {
			product++
		}
	}
	if product < 2*n || attributed != product-n {
		t.Fatalf("got %d faults attributed, %d stored, want at least %d attributed and the %d lost messages stored once: they touch both definitions alike",
			product, attributed, 2*n, n)
	}
	return h, attributed
}

func TestHistoryPastTheAttributionBoundIsNotJudged(t *testing.T) {
	// A history whose faults, attributed to every definition they touch,
	// number more than Options.MaxAttributed is not judged: Judge stops
	// attributing at the definition that crosses the bound and reports one
	// CHECK violation naming the bound, with no coverage; the reports and
	// the porcupine check say the same. At the bound it is judged as
	// usual.
	h, attributed := refusedEverywhere(t, 300)
	o := DefaultOptions()
	o.MaxAttributed = attributed
	vs, cov := o.Judge(h)
	for _, v := range vs {
		if v.Guarantee == "CHECK" {
			t.Fatalf("at the bound: got %s, want the history judged", describe(v))
		}
	}
	if cov.Due[Safety]+cov.Due[Liveness] == 0 {
		t.Fatalf("at the bound: got coverage %+v, want the due pops judged", cov)
	}

	o.MaxAttributed = attributed - 1
	vs, cov = o.Judge(h)
	if len(vs) != 1 || vs[0].Guarantee != "CHECK" || !strings.Contains(vs[0].Message, "Options.MaxAttributed") ||
		!strings.Contains(vs[0].Message, fmt.Sprintf("of 2 definitions already number %d", attributed)) {
		t.Fatalf("past the bound: got %s, want one CHECK violation naming the bound and the count", dump(vs))
	}
	if cov.Due[Safety]+cov.Due[Liveness]+cov.Writes != 0 {
		t.Fatalf("past the bound: got coverage %+v, want none", cov)
	}
	o.MaxAttributed = 299 // below the 300 of the first definition alone
	if vs := o.Check(h); len(vs) != 1 || !strings.Contains(vs[0].Message, "first 1 of 2 definitions") {
		t.Fatalf("a bound the first definition crosses: got %s, want the second left unattributed", dump(vs))
	}
	if ok, info := o.Linearizable(h); !ok || info.Result != porcupine.Unknown || !strings.Contains(info.Note, "not judged") {
		t.Fatalf("Linearizable past the bound: got %v, %s %q, want unknown with the reason", ok, info.Result, info.Note)
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"WriteReport": func(b *bytes.Buffer) error { return o.WriteReport(b, h, vs, header) },
		"WriteHTML":   func(b *bytes.Buffer) error { return o.WriteHTML(b, h, vs, header) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil || !strings.Contains(b.String(), "not judged") {
			t.Fatalf("%s past the bound: got %v and\n%s\nwant the reason", name, err, b.String())
		}
	}
}
