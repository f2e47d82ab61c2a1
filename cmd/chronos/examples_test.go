//go:build unix

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chronos-timer/chronos/internal/proctest"
	"github.com/chronos-timer/chronos/node"
)

// TestExamples starts real processes from exactly the files of examples/
// on the loopback ports they name, and runs each example as its comments
// and docs/operations.md tell it: a timer pops on a single node, and on
// three nodes; a fourth node is added to the three by the scale-up
// procedure with no timer lost or popped twice; a timer created at one
// site keeps popping from the other once its own site is lost. An example
// whose ports are taken is skipped. The examples wait on timers, not on
// the CPU, so they run at the same time (as TestScale's scenarios do);
// the scale-up reuses the three-node example's nodes, so those two run
// one after the other.
func TestExamples(t *testing.T) {
	bin := proctest.Chronos(t)
	runs := []struct {
		name string
		run  func(*testing.T, string)
	}{
		{"single-node", exampleSingleNode},
		{"three-nodes_then_scale-up", exampleThreeNodesThenScaleUp},
		{"two-sites", exampleTwoSites},
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(r.name, func(t *testing.T) { r.run(t, bin) })
		}()
	}
	wg.Wait()
}

// exampleSingleNode proves examples/single-node: a timer pops twice, and
// a callback outside its [callbacks] allowed_host is refused with 400.
func exampleSingleNode(t *testing.T, bin string) {
	n := exampleSetupNamed(t, "single-node").nodes[0]
	skipUnlessFree(t, n.load(t).ListenAddress())
	p := startExample(t, bin, n, "")
	rec := newRecorder(t)
	client := &http.Client{Timeout: clusterWait}
	if status, loc := do(t, client, http.MethodPost, p.url+"/timers", timerBody(1, 2, rec.url, "single")); status != http.StatusOK || !isTimerPath(loc) {
		t.Fatalf("POST /timers: status %d Location %q, want 200 and a timer path", status, loc)
	}
	rec.awaitSeq(t, "single", 1)
	rec.awaitSeq(t, "single", 2)
	// cb.invalid is refused by name, before anything would look it up.
	status, _, reason, err := request(client, http.MethodPost, p.url+"/timers", timerBody(1, 0, "http://cb.invalid/x", "refused"))
	if err != nil || status != http.StatusBadRequest || !strings.Contains(reason, "allowed callback hosts") {
		t.Errorf("POST a callback outside the allow-list: status %d Reason %q (%v), want 400 naming the allowed hosts", status, reason, err)
	}
	rec.check(t, map[string]int{"single": 2})
}

// exampleThreeNodesThenScaleUp proves examples/three-nodes (every node
// serves the three members, and a timer created through one pops from
// them), then examples/scale-up on that cluster, step by step as
// docs/operations.md says: 100 timers created on the three nodes before
// the scale each pop exactly once after it, from the replicas the
// four-node ring places them on.
func exampleThreeNodesThenScaleUp(t *testing.T, bin string) {
	three := exampleSetupNamed(t, "three-nodes")
	joining, after := exampleSetupNamed(t, "scale-up/joining"), exampleSetupNamed(t, "scale-up/after")
	var addrs []string
	for _, n := range after.nodes {
		addrs = append(addrs, n.load(t).ListenAddress())
	}
	skipUnlessFree(t, addrs...)
	s := newScaling(t, bin, "")

	// Each node has a cluster file of its own, as on its own machine,
	// copied from the example's: the scale rewrites it.
	var ps []*process
	for _, n := range three.nodes {
		ps = append(ps, startExample(t, bin, n, install(t, examplePath(n.cluster), "")))
	}
	for _, p := range ps {
		if st := s.status(p); !slices.Equal(st.Nodes, three.members.Nodes) {
			t.Fatalf("%s serves members %v, want %v", p.addr, st.Nodes, three.members.Nodes)
		}
	}
	rec := newRecorder(t)
	tm := clusterTimer{opaque: "three-nodes", interval: 1, repeatFor: 3, rf: 2}
	if status, loc := do(t, s.client, http.MethodPost, ps[1].url+"/timers", tm.body(rec.url)); status != http.StatusOK || !isTimerPath(loc) {
		t.Fatalf("POST /timers: status %d Location %q, want 200 and a timer path", status, loc)
	}
	for seq := 1; seq <= tm.pops(); seq++ {
		rec.awaitSeq(t, tm.opaque, seq)
	}

	timers := s.create(ps, 2)
	// 1. The new node starts with the joining file.
	n4 := joining.nodes[3]
	p4 := startExample(t, bin, n4, install(t, examplePath(n4.cluster), ""))
	// 2. The three reload the same file.
	for _, p := range ps {
		install(t, examplePath(joining.nodes[0].cluster), p.clusterPath)
	}
	s.hup(joining.members, ps...)
	// 3. Every node's resync completes.
	all := append(slices.Clone(ps), p4)
	s.awaitResync(joining.members, all...)
	s.expectHeld(timers, 2, all)
	// 4. The new node becomes an ordinary member.
	for _, p := range all {
		install(t, examplePath(after.nodes[0].cluster), p.clusterPath)
	}
	s.hup(after.members, all...)
	s.expectPops(timers)
}

// exampleTwoSites proves examples/two-sites: a timer created at site A is
// held by both nodes of site B too; once both nodes of site A are killed,
// site B makes its next pops; a delete through site B stops it.
func exampleTwoSites(t *testing.T, bin string) {
	a, b := exampleSetupNamed(t, "two-sites/site-a"), exampleSetupNamed(t, "two-sites/site-b")
	nodes := slices.Concat(a.nodes, b.nodes)
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.load(t).ListenAddress())
	}
	skipUnlessFree(t, addrs...)
	s := newScaling(t, bin, "")
	var ps []*process
	for _, n := range nodes {
		ps = append(ps, startExample(t, bin, n, examplePath(n.cluster)))
	}
	siteA, siteB := ps[:2], ps[2:]

	tm := clusterTimer{opaque: "two-sites", interval: 1, repeatFor: 30, rf: 2}
	status, loc := do(t, s.client, http.MethodPost, siteA[0].url+"/timers", tm.body(s.rec.url))
	if status != http.StatusOK || !isTimerPath(loc) {
		t.Fatalf("POST /timers to site A: status %d Location %q, want 200 and a timer path", status, loc)
	}
	s.rec.awaitSeq(t, tm.opaque, 2)
	for _, p := range siteB {
		if got := s.status(p).Timers; got != 1 {
			t.Fatalf("site B's %s holds %d timers after two pops at site A, want 1: the forward", p.addr, got)
		}
	}

	for _, p := range siteA {
		s.kill(p)
	}
	// Every pop from here on is site B's.
	last := 0
	for _, p := range s.rec.snapshot() {
		if n, err := strconv.Atoi(p.seq); err == nil && p.body == tm.opaque {
			last = max(last, n)
		}
	}
	for seq := last + 1; seq <= last+3; seq++ {
		s.rec.awaitSeq(t, tm.opaque, seq)
	}
	s.logf("site B popped %d to %d after site A was lost", last+1, last+3)

	// A delete through site B stops it. A sentinel due after any pop of
	// it from site B's last replica, site skew included, shows none came.
	if status, _ := do(t, s.client, http.MethodDelete, siteB[0].url+loc, ""); status != http.StatusOK {
		t.Fatalf("DELETE through site B: status %d, want 200", status)
	}
	s.rec.forbid(tm.opaque)
	siteSkew := int(node.ReplicaSkew.Seconds()) * tm.rf
	sentinel := clusterTimer{opaque: "sentinel", interval: staleHorizon(tm.interval, tm.rf) + siteSkew, rf: 2}
	if status, _ := do(t, s.client, http.MethodPost, siteB[1].url+"/timers", sentinel.body(s.rec.url)); status != http.StatusOK {
		t.Fatalf("POST the sentinel through site B: status %d, want 200", status)
	}
	s.rec.awaitSeq(t, sentinel.opaque, 1)
	s.rec.check(t, map[string]int{tm.opaque: tm.pops(), sentinel.opaque: 1})
}

// exampleSetupNamed returns the example configuration name of
// exampleSetups.
func exampleSetupNamed(t *testing.T, name string) exampleSetup {
	t.Helper()
	for _, s := range exampleSetups() {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no example setup %q", name)
	return exampleSetup{}
}

// startExample starts node n of an example from its own files, with the
// cluster file at clusterPath, and waits until it serves.
func startExample(t *testing.T, bin string, n exampleNode, clusterPath string) *process {
	t.Helper()
	addr := n.load(t).ListenAddress()
	p := &process{url: "http://" + addr, addr: addr, localPath: examplePath(n.local), clusterPath: clusterPath, files: n.args()}
	if err := p.start(t, bin, scaleWait); err != nil {
		t.Fatal(err)
	}
	return p
}

// install copies the file src to dst, a new file in a temporary folder if
// dst is "", as an operator puts a cluster file in place, and returns dst.
func install(t *testing.T, src, dst string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if dst == "" {
		dst = filepath.Join(t.TempDir(), filepath.Base(src))
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}
