package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"github.com/cockroachdb/datadriven"
)

// TestTraces replays the stories in testdata/traces: each file drives a
// small cluster by hand (client writes, time, nodes going down, lost
// messages) and shows, after each step, every message the nodes sent, its
// answer, and every callback. The files are the replication rules told as
// what happens; `go test ./node -run TestTraces -rewrite` rewrites the
// expected output after a deliberate change (read the diff).
//
// Commands:
//
//	cluster [nodes=N]                            N nodes n1..nN (default 3)
//	create <timer> via=<node> interval=<s> [repeat-for=<s>] [rf=<n>] [opaque=<text>]
//	update <timer> via=<node> interval=<s> [repeat-for=<s>] [opaque=<text>]
//	delete <timer> via=<node>
//	advance <duration> [status=<code>]           callbacks answer status (200)
//	down <node> / up <node>                      a down node sends and receives nothing
//	restart <node>                               the node comes back empty
//	lose <node>                                  drop every message to node until the next command
//	holders <timer>                              what each node holds of the timer
func TestTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/traces", func(t *testing.T, path string) {
		var tr *tracer
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "cluster" && tr == nil {
				d.Fatalf(t, "%s before cluster", d.Cmd)
			}
			switch d.Cmd {
			case "cluster":
				n := 3
				d.MaybeScanArgs(t, "nodes", &n)
				tr = newTracer(t, n)
				return strings.Join(tr.names, " ")
			case "create", "update":
				return tr.write(t, d)
			case "delete":
				return tr.clientCall(t, d, "DELETE", nil)
			case "advance":
				return tr.advance(t, d)
			case "down", "up", "restart", "lose":
				return tr.nodeCommand(t, d)
			case "holders":
				return tr.holders(t, d)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

// tracer drives a cluster and names what it prints: nodes n1.., timers by
// the names the story gave them, times from the start.
type tracer struct {
	c      *cluster
	names  []string          // node names, in address order
	byAddr map[string]string // address -> node name
	timers map[string]string // story name -> wire ID
	byID   map[uint64]string // unique ID -> story name
	lost   map[string]bool   // addresses whose messages are dropped
	out    *strings.Builder
	// stamp prefixes each line with the time, while time moves.
	stamp bool
}

func newTracer(t *testing.T, n int) *tracer {
	addrs := make([]string, n)
	tr := &tracer{byAddr: map[string]string{}, timers: map[string]string{}, byID: map[uint64]string{}, lost: map[string]bool{}}
	for i := range addrs {
		addrs[i] = fmt.Sprintf("10.0.0.%d:7253", i+1)
		tr.names = append(tr.names, fmt.Sprintf("n%d", i+1))
		tr.byAddr[addrs[i]] = tr.names[i]
	}
	tr.c = newCluster(t, addrs...)
	tr.c.watch = tr.watch
	tr.c.lose = func(host string, _ Request) bool { return tr.lost[host] }
	tr.out = &strings.Builder{}
	return tr
}

// watch prints each message the cluster delivered or dropped, and each
// callback, with the time while time moves.
func (tr *tracer) watch(s *sent, to string, status int, lost bool) {
	if tr.stamp {
		fmt.Fprintf(tr.out, "%v ", tr.now())
	}
	switch {
	case to == "":
		id, _ := strconv.ParseUint(s.req.Header.Get(wire.HeaderTimerID), 16, 64)
		fmt.Fprintf(tr.out, "%s pops %s #%s %q → %d\n", tr.byAddr[s.from], tr.byID[id],
			s.req.Header.Get(wire.HeaderSequenceNumber), s.req.Body, status)
	case lost:
		fmt.Fprintf(tr.out, "%s → %s: %s %s → lost\n", tr.byAddr[s.from], tr.byAddr[to], s.req.Method, tr.describe(s.req))
	default:
		fmt.Fprintf(tr.out, "%s → %s: %s %s → %d\n", tr.byAddr[s.from], tr.byAddr[to], s.req.Method, tr.describe(s.req), status)
	}
}

func (tr *tracer) addr(t *testing.T, d *datadriven.TestData, name string) string {
	for a, n := range tr.byAddr {
		if n == name {
			return a
		}
	}
	d.Fatalf(t, "no node %q", name)
	return ""
}

func (tr *tracer) arg(t *testing.T, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 || len(d.CmdArgs[0].Vals) != 0 {
		d.Fatalf(t, "%s needs a name first", d.Cmd)
	}
	return d.CmdArgs[0].Key
}

func (tr *tracer) now() time.Duration { return tr.c.clock.now.Sub(epoch) }

// write sends a create or update and prints what followed.
func (tr *tracer) write(t *testing.T, d *datadriven.TestData) string {
	var interval, repeatFor, rf int
	opaque := tr.arg(t, d)
	d.ScanArgs(t, "interval", &interval)
	d.MaybeScanArgs(t, "repeat-for", &repeatFor)
	d.MaybeScanArgs(t, "rf", &rf)
	d.MaybeScanArgs(t, "opaque", &opaque)
	body := wire.Encode(wire.Timer{Interval: time.Duration(interval) * time.Second, RepeatFor: time.Duration(repeatFor) * time.Second, URI: cb, Opaque: opaque, ReplicationFactor: rf})
	if d.Cmd == "create" {
		return tr.clientCall(t, d, "POST", body)
	}
	return tr.clientCall(t, d, "PUT", body)
}

// clientCall sends a client request through the via node, settles the
// cluster, and prints the messages and the answer.
func (tr *tracer) clientCall(t *testing.T, d *datadriven.TestData, method string, body []byte) string {
	name := tr.arg(t, d)
	var via string
	d.ScanArgs(t, "via", &via)
	url := "/timers"
	if method != "POST" {
		wid, ok := tr.timers[name]
		if !ok {
			d.Fatalf(t, "no timer %q", name)
		}
		url += "/" + wid
	}
	tr.out = &strings.Builder{}
	var got *Response
	tr.c.nodes[tr.addr(t, d, via)].Handle(Request{Method: method, URL: url, Header: Header{}, Body: body}, func(r Response) { got = &r })
	tr.c.settle()
	if got == nil {
		d.Fatalf(t, "%s %s via %s: no answer", method, url, via)
	}
	if loc := got.Header.Get(wire.HeaderLocation); loc != "" {
		wid := strings.TrimPrefix(loc, "/timers/")
		if id, _, err := wire.ParseWireID(wid); err == nil {
			tr.timers[name], tr.byID[id] = wid, name
			named := strings.ReplaceAll(tr.out.String(), fmt.Sprintf("%016x", id), name)
			tr.out.Reset()
			tr.out.WriteString(named)
		}
	}
	fmt.Fprintf(tr.out, "%s answers %d", via, got.Status)
	if got.Status/100 != 2 {
		fmt.Fprintf(tr.out, " (%s)", reasonOf(*got))
	}
	return tr.done()
}

// describe names a node-to-node request's timer and summarises its body.
func (tr *tracer) describe(req Request) string {
	wid := req.URL[strings.LastIndex(req.URL, "/")+1:]
	name := wid
	if id, _, err := wire.ParseWireID(wid); err == nil {
		// A timer the story has not named yet (its create is still
		// running) shows as its unique ID, named once the answer comes.
		name = fmt.Sprintf("%016x", id)
		if n, ok := tr.byID[id]; ok {
			name = n
		}
	}
	spec, repl, err := wire.Parse(req.Body)
	if err != nil || repl == nil {
		return name
	}
	what := strconv.Quote(spec.Opaque)
	if deletes(spec) {
		what = "tombstone"
	}
	replicas := make([]string, len(repl.Replicas))
	for i, r := range repl.Replicas {
		replicas[i] = tr.byAddr[r]
	}
	var missed []uint32
	for p := repl.Seq; p > 0 && repl.Seq-p < MissedWindow; p-- {
		if repl.Missed&popBit(repl.Seq, p) != 0 {
			missed = append(missed, p)
		}
	}
	if len(missed) > 0 {
		what += fmt.Sprintf(" missed %v", missed)
	}
	return fmt.Sprintf("%s %s seq %d replicas %v", name, what, repl.Seq, replicas)
}

// advance moves time on in 100 ms steps, answering callbacks, and prints
// what happened with the time it happened at.
func (tr *tracer) advance(t *testing.T, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 {
		d.Fatalf(t, "advance needs a duration")
	}
	dur, err := time.ParseDuration(d.CmdArgs[0].Key)
	if err != nil {
		d.Fatalf(t, "advance: %v", err)
	}
	status := 200
	d.MaybeScanArgs(t, "status", &status)
	tr.out = &strings.Builder{}
	tr.stamp = true
	tr.c.advance(dur, status)
	tr.stamp = false
	return tr.done()
}

func (tr *tracer) nodeCommand(t *testing.T, d *datadriven.TestData) string {
	addr := tr.addr(t, d, tr.arg(t, d))
	switch d.Cmd {
	case "down":
		tr.c.down[addr] = true
	case "up":
		tr.c.down[addr] = false
	case "restart":
		tr.c.down[addr] = false
		tr.c.restart(addr)
	case "lose":
		tr.lost[addr] = true
		return "ok"
	}
	clear(tr.lost)
	return "ok"
}

// holders prints what each node holds of a timer.
func (tr *tracer) holders(t *testing.T, d *datadriven.TestData) string {
	name := tr.arg(t, d)
	wid, ok := tr.timers[name]
	if !ok {
		d.Fatalf(t, "no timer %q", name)
	}
	id, _, _ := wire.ParseWireID(wid)
	var lines []string
	for a, n := range tr.byAddr {
		held, ok := tr.c.nodes[a].Timer(id)
		switch {
		case !ok:
			lines = append(lines, n+": nothing")
		case held.State == Live:
			lines = append(lines, fmt.Sprintf("%s: %q seq %d", n, held.Opaque(), held.Seq))
		default:
			lines = append(lines, fmt.Sprintf("%s: tombstone seq %d", n, held.Seq))
		}
	}
	slices.Sort(lines)
	clear(tr.lost)
	return strings.Join(lines, "\n")
}

func (tr *tracer) done() string {
	clear(tr.lost)
	s := strings.TrimSuffix(tr.out.String(), "\n")
	if s == "" {
		return "nothing"
	}
	return s
}
