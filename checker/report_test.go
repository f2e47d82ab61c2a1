package checker

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// htmlOut, when set, keeps the HTML report of TestWriteHTML for a person
// to open: go test ./checker -run TestWriteHTML -html /tmp/report.html
var htmlOut = flag.String("html", "", "write TestWriteHTML's report to this file")

// brokenHistory has a delete that does not stick, a partition and an
// early pop.
func brokenHistory() *History {
	h := healthy()
	h.Ops = append(h.Ops, del(2, 1, 2500*ms, 2510*ms, OK))
	h.Pops[0].At = 500 * ms
	h.Faults = []Fault{{At: 6 * sec, Kind: Partition, Nodes: []string{"n1"}, Peers: []string{"n2"}},
		{At: 7 * sec, Kind: Heal}}
	h.LivenessFrom = 7 * sec
	return h
}

var header = ReportHeader{Seed: 42, FaultMix: "partition,crash", ReplayCommand: "chronos-sim -seed 42 -replay",
	TraceHash: "deadbeef"}

func TestWriteReport(t *testing.T) {
	// The text report names the seed, fault mix, trace hash, the first
	// violation with the events around it in time order, and the replay
	// command.
	h := brokenHistory()
	vs := Check(h)
	var b bytes.Buffer
	if err := WriteReport(&b, h, vs, header); err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	out := b.String()
	for _, want := range []string{"seed:       42", "partition,crash", "deadbeef", "FIRST VIOLATION: G1",
		"pop 1 from n1 arrived early", "op 2 client 2 -> n1: delete timer 0000000000000001",
		"seq 1 \"a\" from n1", "replay: chronos-sim -seed 42 -replay", "all violations:", "timer deleted by op 2", "porcupine"} {
		if !strings.Contains(out, want) {
			t.Fatalf("got report:\n%s\nwant it to contain %q", out, want)
		}
	}
	first, later := strings.Index(out, "seq 1 \"a\""), strings.Index(out, "seq 2 \"a\"")
	if first < 0 || later < 0 || first > later {
		t.Fatalf("got report:\n%s\nwant events in time order", out)
	}
}

func TestWriteReportWithoutViolations(t *testing.T) {
	// A clean history still gets a header and says there is no violation.
	var b bytes.Buffer
	if err := WriteReport(&b, healthy(), nil, header); err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	if out := b.String(); !strings.Contains(out, "violations: none") || strings.Contains(out, "FIRST VIOLATION") {
		t.Fatalf("got report:\n%s\nwant 'violations: none' and no first violation", out)
	}
}

func TestWriteHTML(t *testing.T) {
	// The HTML report is one self-contained page with the header, the
	// violations table, an SVG timeline with faults, pops, ops and
	// violation markers, and porcupine's visualization embedded.
	h := brokenHistory()
	vs := Check(h)
	var b bytes.Buffer
	if err := WriteHTML(&b, h, vs, header); err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	out := b.String()
	if *htmlOut != "" {
		if err := os.WriteFile(*htmlOut, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"<!DOCTYPE html>", "seed 42", "chronos-sim -seed 42 -replay", "deadbeef",
		"<svg", `class="fault"`, `class="pop"`, `class="op"`, `<line class="violation"`, `<tr class="violation" id="v0">`,
		"partition n1 | n2", "<iframe class=\"porcupine\"", "srcdoc=\"&lt;!doctype html&gt;", "Illegal",
		"G5", "</html>"} {
		if !strings.Contains(out, want) {
			t.Fatalf("got HTML without %q (length %d)", want, len(out))
		}
	}
	if strings.Contains(out, "<script") && !strings.Contains(out, "srcdoc") {
		t.Fatalf("got a script outside the porcupine frame, want it inside srcdoc")
	}
}

func TestHTMLLeadsWithTheReasonAndDetailsEachTimer(t *testing.T) {
	// The page names what failed before anything else, links the first
	// violation to its timer's section, which lists the replicas by rank
	// and the due pops against the deliveries, escapes what the client
	// sent, and keeps to its limits on a big history.
	h, primary, _, _ := placed(t)
	h.Ops[0].Spec.Opaque = "<script>alert(1)</script>"
	for i := range h.Pops {
		h.Pops[i].Opaque = h.Ops[0].Spec.Opaque
	}
	h.Pops = h.Pops[:4] // pops 5..10 are lost: G2
	vs := Check(h)
	hdr := header
	hdr.Unmet = []string{"expect pops t1 >= 10: got 4"}
	hdr.Trace = []TraceLine{{At: sec, Text: "send n1 n2 PUT http://n2/timers/" + fmt.Sprintf("%016x", uint64(placedTimer)) + "0000000000000000"}}
	var b bytes.Buffer
	if err := WriteHTML(&b, h, vs, hdr); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	verdict, timeline := strings.Index(out, "FAILED"), strings.Index(out, "<h2>Timeline")
	if verdict < 0 || timeline < 0 || verdict > timeline || !strings.Contains(out[:timeline], "unmet expectation") {
		t.Fatalf("want the verdict and the unmet expectation before the timeline")
	}
	anchor := fmt.Sprintf(`href="#timer-%016x"`, uint64(placedTimer))
	section := fmt.Sprintf(`id="timer-%016x"`, uint64(placedTimer))
	for _, want := range []string{anchor, section, `href="#v0"`, `id="v0"`, "(primary)", primary, "missing", "rank 0",
		"trace lines naming this timer", "Judged coverage", "Legend", "&lt;script&gt;"} {
		if !strings.Contains(out, want) {
			t.Fatalf("got HTML without %q", want)
		}
	}
	if i := strings.Index(out, "<script>alert"); i >= 0 {
		t.Fatalf("client data reached the page unescaped: %s", out[max(0, i-200):i+40])
	}
	big := &History{Members: h.Members, End: time.Hour}
	for i := range 200 {
		op := write(i+1, Create, uint64(1000+i), fmt.Sprint("o", i), sec, 10*time.Minute, 0, 10*ms, OK)
		big.Ops = append(big.Ops, op)
	}
	b.Reset()
	if err := WriteHTML(&b, big, Check(big), header); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `<details id="timer-`); n != maxReportTimers {
		t.Fatalf("got %d timer sections, want the cap %d", n, maxReportTimers)
	}
}

func TestCheckIsDeterministic(t *testing.T) {
	// Check gives the same violations, in the same order, every time,
	// though porcupine checks partitions concurrently.
	first := Check(brokenHistory())
	for range 20 {
		if again := Check(brokenHistory()); !reflect.DeepEqual(again, first) {
			t.Fatalf("got:\n%s\nwant:\n%s", dump(again), dump(first))
		}
	}
}
