//go:build unix

package main

import (
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chronos-timer/chronos/internal/localcluster"
	"github.com/chronos-timer/chronos/internal/proctest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
)

// TestExamples starts real processes from the files of examples/, each
// port they name moved to a free one (moveExamples), and runs each example
// as its comments and docs/operations.md tell it: a timer pops on a single
// node, and on three nodes; a fourth node is added to the three by the
// scale-up procedure with no timer lost or popped twice; a timer created
// at one site keeps popping from the other once its own site is lost. The
// examples wait on timers, not on the CPU, so they run at the same time
// (as TestScale's scenarios do); the scale-up reuses the three-node
// example's nodes, so those two run one after the other.
func TestExamples(t *testing.T) {
	t.Parallel() // waits on real timers, not on the CPU (Makefile: -parallel)
	bin := proctest.Chronos(t)
	moved := moveExamples(t)
	runs := []struct {
		name string
		run  func(*testing.T, string, *movedExamples)
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
			t.Run(r.name, func(t *testing.T) { r.run(t, bin, moved) })
		}()
	}
	wg.Wait()
}

// exampleSingleNode proves examples/single-node: a timer pops twice, and
// a callback outside its [callbacks] allowed_host is refused with 400.
func exampleSingleNode(t *testing.T, bin string, moved *movedExamples) {
	n := moved.setup(t, "single-node").nodes[0]
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
func exampleThreeNodesThenScaleUp(t *testing.T, bin string, moved *movedExamples) {
	three := moved.setup(t, "three-nodes")
	joining, after := moved.setup(t, "scale-up/joining"), moved.setup(t, "scale-up/after")
	s := newScaling(t, bin, "")

	// Each node has a cluster file of its own, as on its own machine,
	// copied from the example's: the scale rewrites it.
	var ps []*process
	for _, n := range three.nodes {
		ps = append(ps, startExample(t, bin, n, install(t, n.path(n.cluster), "")))
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
	p4 := startExample(t, bin, n4, install(t, n4.path(n4.cluster), ""))
	// 2. The three reload the same file.
	for _, p := range ps {
		install(t, joining.nodes[0].path(joining.nodes[0].cluster), p.clusterPath)
	}
	s.hup(joining.members, ps...)
	// 3. Every node's resync completes.
	all := append(slices.Clone(ps), p4)
	s.awaitResync(joining.members, all...)
	s.expectHeld(timers, 2, all)
	// 4. The new node becomes an ordinary member.
	for _, p := range all {
		install(t, after.nodes[0].path(after.nodes[0].cluster), p.clusterPath)
	}
	s.hup(after.members, all...)
	s.expectPops(timers)
}

// exampleTwoSites proves examples/two-sites: a timer created at site A is
// held by both nodes of site B too; once both nodes of site A are killed,
// site B makes its next pops; a delete through site B stops it.
func exampleTwoSites(t *testing.T, bin string, moved *movedExamples) {
	a, b := moved.setup(t, "two-sites/site-a"), moved.setup(t, "two-sites/site-b")
	nodes := slices.Concat(a.nodes, b.nodes)
	s := newScaling(t, bin, "")
	var ps []*process
	for _, n := range nodes {
		ps = append(ps, startExample(t, bin, n, n.path(n.cluster)))
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

// movedExamples is a copy of examples/ in which each port an example
// listens on is replaced by one that was free a moment ago, so that the
// examples run whatever else listens on 7253 or 7261 (a `make run` left
// up, another test): the files are otherwise the examples', byte for byte.
type movedExamples struct {
	root  string
	ports map[string]string // an example's port: the copy's
}

// examplePort is a port number standing alone in an example's file.
var examplePort = regexp.MustCompile(`\b\d{4,5}\b`)

// moveExamples copies examples/ into a temporary folder with its ports
// moved: those the example nodes listen on, wherever they appear (a
// member, a remote site, a bind-port, a comment).
func moveExamples(t *testing.T) *movedExamples {
	t.Helper()
	m := &movedExamples{root: t.TempDir(), ports: map[string]string{}}
	var ports []string
	for _, s := range exampleSetups() {
		for _, n := range s.nodes {
			_, port, _ := net.SplitHostPort(n.load(t).ListenAddress())
			if !slices.Contains(ports, port) {
				ports = append(ports, port)
			}
		}
	}
	// A node configured with an instance number refuses to start when
	// another member's address derives that number (node.Config): the
	// examples' own ports derive none of theirs, but a free port may,
	// about one run in a few hundred. Such ports are drawn again.
	for range 20 {
		m.place(t, ports)
		if !m.instanceClash(t) {
			return m
		}
	}
	t.Fatal("20 draws of free ports each gave a member the instance number another node is configured with")
	return nil
}

// place writes the copy of examples/ with ports moved to free ones.
func (m *movedExamples) place(t *testing.T, ports []string) {
	t.Helper()
	addrs, err := localcluster.FreeAddrs(len(ports))
	if err != nil {
		t.Fatal(err)
	}
	for i, port := range ports {
		_, m.ports[port], _ = net.SplitHostPort(addrs[i])
	}
	err = filepath.WalkDir(examplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(examplesDir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data = examplePort.ReplaceAllFunc(data, func(p []byte) []byte {
			if to, ok := m.ports[string(p)]; ok {
				return []byte(to)
			}
			return p
		})
		if err := os.MkdirAll(filepath.Join(m.root, filepath.Dir(rel)), 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(m.root, rel), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// instanceClash reports whether a node of the copy refuses its
// configuration because a member's address derives the instance number
// it is configured with.
func (m *movedExamples) instanceClash(t *testing.T) bool {
	t.Helper()
	for _, s := range exampleSetups() {
		for _, n := range m.setup(t, s.name).nodes {
			f := config.Flags{LocalConfigFile: n.path(n.local), ClusterConfigFile: n.path(n.cluster),
				SharedConfigFile: n.path(n.shared), DNSConfigFile: n.path(n.dns)}
			if _, err := f.Load(); err != nil && strings.Contains(err.Error(), " derives;") {
				return true
			}
		}
	}
	return false
}

// setup returns the example configuration name of exampleSetups, its
// files and membership those of the moved copy.
func (m *movedExamples) setup(t *testing.T, name string) exampleSetup {
	t.Helper()
	s := exampleSetupNamed(t, name)
	nodes := slices.Clone(s.nodes)
	for i := range nodes {
		nodes[i].root = m.root
	}
	s.nodes = nodes
	s.members = node.Membership{Nodes: m.addrs(t, s.members.Nodes), Joining: m.addrs(t, s.members.Joining), Leaving: m.addrs(t, s.members.Leaving)}
	return s
}

// addrs returns the moved copy's addresses for an example's.
func (m *movedExamples) addrs(t *testing.T, addrs []string) []string {
	t.Helper()
	var out []string
	for _, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		to, ok := m.ports[port]
		if !ok {
			t.Fatalf("example address %s: no node of the examples listens on its port", a)
		}
		out = append(out, net.JoinHostPort(host, to))
	}
	return out
}

// startExample starts node n of an example from its own files, with the
// cluster file at clusterPath, and waits until it serves.
func startExample(t *testing.T, bin string, n exampleNode, clusterPath string) *process {
	t.Helper()
	addr := n.load(t).ListenAddress()
	p := &process{url: "http://" + addr, addr: addr, localPath: n.path(n.local), clusterPath: clusterPath, files: n.args()}
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
