package main

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/proctest"
)

// TestMain serves as the bare server when the tool under test starts this
// binary as one (bare.go).
func TestMain(m *testing.M) {
	serveBareIfAsked()
	code := m.Run()
	proctest.Cleanup()
	os.Exit(code)
}

// TestOptionsRefuseAddressesOffLoopback proves the tool loads only
// loopback nodes, checked without sending anything.
func TestOptionsRefuseAddressesOffLoopback(t *testing.T) {
	base := options{nodes: 1, rf: 1, timers: 10, window: time.Second, concurrency: 1, pops: 1}
	for targets, ok := range map[string]bool{
		"127.0.0.1:7253":                true,
		"[::1]:7253, 127.0.0.2:7253":    true,
		"10.0.0.1:7253":                 false,
		"127.0.0.1:7253,192.168.1.1:80": false,
		"localhost:7253":                false, // names are not looked up
		"127.0.0.1":                     false, // no port
	} {
		o := base
		o.targets = targets
		if err := o.check(); (err == nil) != ok {
			t.Errorf("-targets %q: got error %v, want accepted %v", targets, err, ok)
		}
	}
	for _, bad := range []options{
		{nodes: 0, rf: 1, timers: 1, window: time.Second, concurrency: 1},
		{nodes: 1, rf: 1, timers: 1, window: time.Second, concurrency: 1, lead: 1500 * time.Millisecond},
		{nodes: 1, rf: 1, timers: 0, window: time.Second, concurrency: 1},
	} {
		if err := bad.check(); err == nil {
			t.Errorf("%+v: got no error", bad)
		}
	}
}

// TestLoadOneNode runs the tool end to end against one real node on
// loopback: every timer it creates pops once, never early, and every
// figure of the report is measured.
func TestLoadOneNode(t *testing.T) {
	bin := proctest.Chronos(t)
	profileSegment = time.Second
	o := options{nodes: 1, rf: 1, timers: 300, window: time.Second, concurrency: 16, bin: bin, pops: 1, profile: t.TempDir()}
	rep, err := run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.created != o.timers || rep.lost != 0 || rep.early != 0 || rep.duplicated != 0 {
		t.Fatalf("created %d of %d, %d lost, %d early, %d duplicated: want all created and popped once, none early",
			rep.created, o.timers, rep.lost, rep.early, rep.duplicated)
	}
	if rep.createTime <= 0 || rep.cpu <= 0 || rep.load[1] == "" || rep.bareCreateTime <= 0 || rep.bareHereTime <= 0 || rep.barePopTime <= 0 || rep.rssBefore <= 0 || len(rep.lateness) != o.timers {
		t.Fatalf("figures not measured: %+v", rep)
	}
	if got := rep.outbound["callback ok"]; got != float64(o.timers) {
		t.Errorf("node's metrics count %v callbacks answered, want %d", got, o.timers)
	}
	// -profile: the node's CPU and allocation profiles, gzipped protos.
	for _, name := range []string{"node0-cpu-00.pprof", "node0-allocs.pprof"} {
		b, err := os.ReadFile(filepath.Join(o.profile, name))
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("profile %s: %v, %d bytes: want a gzipped profile", name, err, len(b))
		}
	}
}

// TestLoadJoin runs -join end to end on real nodes on loopback: two nodes
// hold rf 2 timers, a third joins, and once every node's resync has
// completed each timer is live on exactly two nodes, the new one holding
// its share; the joining node's own resync time is reported, and with
// -profile every node, the joining one too, is profiled during the join.
func TestLoadJoin(t *testing.T) {
	bin := proctest.Chronos(t)
	joinLimit = 2 * time.Minute // well under the test binary's timeout
	profileSegment = time.Second
	o := options{nodes: 2, rf: 2, timers: 300, window: time.Second, concurrency: 16, bin: bin, pops: 1, hold: true, join: 1, profile: t.TempDir()}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	rep, err := run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.created != o.timers || rep.join == nil || len(rep.join.status) != 3 {
		t.Fatalf("created %d of %d, join %+v: want all created and three nodes' status", rep.created, o.timers, rep.join)
	}
	held := 0
	for _, st := range rep.join.status {
		held += st.Timers
	}
	if newcomer := rep.join.status[2].Timers; held != o.timers*o.rf || newcomer == 0 {
		t.Errorf("%d live records on the nodes, %d on the new one: want %d, some on the new one", held, newcomer, o.timers*o.rf)
	}
	if rep.join.joinerTook <= 0 || rep.join.load[1] == "" {
		t.Errorf("the joining node's resync took %v, load average %q: want both measured", rep.join.joinerTook, rep.join.load)
	}
	var out strings.Builder
	rep.write(&out)
	if !strings.Contains(out.String(), "join:") || !strings.Contains(out.String(), "resync:") {
		t.Errorf("report has no join or resync line:\n%s", out.String())
	}
	for _, name := range []string{"node2-cpu-00.pprof", "node0-allocs.pprof"} {
		if _, err := os.Stat(filepath.Join(o.profile, name)); err != nil {
			t.Errorf("the join's profiles: %v", err)
		}
	}
}

// TestAddOutbound proves the tool reads the outbound counters and the
// batch counters from the Prometheus text format and ignores every other
// line.
func TestAddOutbound(t *testing.T) {
	sums := map[string]float64{}
	for _, line := range []string{
		`# TYPE chronos_outbound_requests_total counter`,
		`chronos_outbound_requests_total{kind="callback",outcome="shed"} 12`,
		`chronos_outbound_requests_total{kind="callback",outcome="shed"} 3`,
		`chronos_outbound_requests_total{kind="peer",outcome="ok"} 1.5e+06`,
		`chronos_outbound_queue_depth 7`,
		`chronos_outbound_requests_total{kind="peer",outcome="failed"} x`,
		`# HELP chronos_outbound_batches_total Batches of requests between nodes.`,
		`chronos_outbound_batches_total 40`,
		`chronos_outbound_batches_total 2`,
		`chronos_outbound_batched_requests_total 300`,
		`chronos_outbound_batched_requests_total{x="y"} 5`,
	} {
		addOutbound(sums, line)
	}
	want := map[string]float64{"callback shed": 15, "peer ok": 1.5e6, "peer batches": 42, "peer batched": 300}
	if !maps.Equal(sums, want) {
		t.Errorf("sums = %v, want %v", sums, want)
	}
}

// TestOptionsRefuseBadMemoryFlags proves the memory flags are checked
// before anything starts: -linger with -hold (held timers never pop),
// -memory-limit for nodes the tool does not configure, a limit that
// would break the configuration file, and a negative -linger.
func TestOptionsRefuseBadMemoryFlags(t *testing.T) {
	base := options{nodes: 1, rf: 1, timers: 10, window: time.Second, concurrency: 1, pops: 1}
	ok := base
	ok.hold, ok.memoryLimit = true, "300MiB"
	if err := ok.check(); err != nil {
		t.Fatalf("-hold -memory-limit 300MiB: got %v, want accepted", err)
	}
	for name, mutate := range map[string]func(*options){
		"join without hold":    func(o *options) { o.join = 1 },
		"join with targets":    func(o *options) { o.hold, o.join, o.targets = true, 1, "127.0.0.1:7253" },
		"join past 16 nodes":   func(o *options) { o.hold, o.nodes, o.join = true, 10, 7 },
		"linger with hold":     func(o *options) { o.hold, o.linger = true, time.Second },
		"limit with targets":   func(o *options) { o.targets, o.memoryLimit = "127.0.0.1:7253", "1GiB" },
		"limit with a section": func(o *options) { o.memoryLimit = "1GiB\n[cluster]" },
		"negative linger":      func(o *options) { o.linger = -time.Second },
		"bare without hold":    func(o *options) { o.bare = true },
	} {
		o := base
		mutate(&o)
		if err := o.check(); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

// TestParseCPU proves the tool reads a process's user and system time
// from /proc/<pid>/stat, a command name with spaces and parentheses
// included, and refuses a line it cannot read.
func TestParseCPU(t *testing.T) {
	line := "4242 (chr (o) nos) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 0 0"
	got, err := parseCPU(line)
	if err != nil || got != 3250*time.Millisecond {
		t.Errorf("parseCPU = %v, %v; want 3.25s (325 ticks)", got, err)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2", "4242 (x) S 1 4242 4242 0 -1 0 0 0 0 0 u s"} {
		if _, err := parseCPU(bad); err == nil {
			t.Errorf("parseCPU(%q): got no error", bad)
		}
	}
	if d, err := cpuTime(os.Getpid()); err != nil || d < 0 {
		t.Errorf("cpuTime(self) = %v, %v", d, err)
	}
}
