//go:build unix

package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/proctest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/observe"
	"github.com/chronos-timer/chronos/wire"
)

// The scale tests drive production binaries through the original's scale
// procedure (its scaling.md), with its files and signals: the flags
// --local-config-file and --cluster-config-file, [cluster] localhost,
// node, joining and leaving lines, SIGHUP to reload, SIGUSR1 to resync,
// and GET /status to learn when a resync has completed. Each scenario
// creates its timers before the cluster changes, due after the change is
// done, so that every timer has moved by the time it pops.
const (
	// scaleTimers is how many timers each scenario creates.
	scaleTimers = 100
	// scaleInterval is the interval of the first timer; the others are
	// spread over scaleSpread more seconds. Each timer pops once
	// (repeat-for equals its interval). It must outlast the slowest
	// scale of these tests, which take a few seconds (a peer not yet
	// reloaded is asked again 1 s later): a pop before the scale has
	// completed fails the test with that reason.
	scaleInterval = 30 * time.Second
	scaleSpread   = 5
	// scaleWait bounds each wait for a process, a reload, a resync or a
	// pop. A ceiling against hangs, never a measured timing.
	scaleWait = 60 * time.Second
	// statusPoll is how often a wait asks GET /status again.
	statusPoll = 50 * time.Millisecond
	// scaleKey is the [cluster] key of a scenario that sets one, as a
	// deployment would: the resync API is then signed with it.
	scaleKey = "5c0a1e7d3b9f42c68e1d07a4b2f9c316"
)

// TestScale proves elastic scaling of real processes on loopback: in each
// scenario (a subtest) 100 timers created before the cluster changes each
// pop exactly once, with X-Sequence-Number 1, never twice, from the nodes
// that remain. The scenarios wait on timers, not on the CPU, so they run
// at the same time: each t.Run in a goroutine of its own, which the
// -parallel limit (GOMAXPROCS by default) does not hold back as it would
// t.Parallel subtests.
func TestScale(t *testing.T) {
	t.Parallel() // waits on real timers, not on the CPU (Makefile: -parallel)
	bin := proctest.Chronos(t)
	scenarios := []struct {
		name string
		run  func(*scaling)
		key  string // [cluster] key of every node
	}{
		{name: "up_2_to_4", run: scaleUpTwoToFour},
		{name: "down_4_to_2", run: scaleDownFourToTwo},
		{name: "up_2_to_4_then_down_to_the_new_2", run: scaleUpThenRetireOriginals},
		{name: "up_1_to_2_then_kill_the_first", run: scaleUpOneToTwoThenKillFirst},
		{name: "killed_node_repopulates", run: scaleRestartRepopulates},
		// A deployment sets a cluster key; the resync API is signed.
		{name: "up_2_to_4_with_cluster_key", run: scaleUpTwoToFour, key: scaleKey},
	}
	var wg sync.WaitGroup
	for _, sc := range scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(sc.name, func(t *testing.T) {
				sc.run(newScaling(t, bin, sc.key))
			})
		}()
	}
	wg.Wait()
}

// scaleUpTwoToFour proves scaling up, 2 -> 4 nodes: two new nodes start
// with the scale configuration (the old nodes as node, themselves as
// joining), the old nodes reload it, and once every node's resync has
// completed each node holds exactly the timers the four-node ring places
// on it; after the final configuration every timer pops exactly once.
func scaleUpTwoToFour(s *scaling) {
	old := s.start(2, func(addrs []string) node.Membership { return node.Membership{Nodes: addrs} })
	timers := s.create(old, 2)

	added := s.grow(old, 2)
	all := slices.Concat(old, added)
	s.expectHeld(timers, 2, all)

	s.reload(node.Membership{Nodes: addrsOf(all)}, all...)
	s.expectPops(timers)
}

// scaleDownFourToTwo proves scaling down, 4 -> 2 nodes, as the original
// procedure runs it: every node reloads the scale configuration (two as
// leaving), the staying nodes are asked to resync again with SIGUSR1, and
// once their resyncs have completed the staying nodes hold every timer
// and the leaving ones none. The leaving nodes are then stopped, the
// final configuration reloaded, and every timer pops exactly once.
func scaleDownFourToTwo(s *scaling) {
	all := s.start(4, func(addrs []string) node.Membership { return node.Membership{Nodes: addrs} })
	timers := s.create(all, 2)

	staying, leaving := all[:2], all[2:]
	s.shrink(staying, leaving)
	s.resyncAgain(node.Membership{Nodes: addrsOf(staying), Leaving: addrsOf(leaving)}, staying...)
	s.expectHeld(timers, 2, all)

	s.stop(leaving...)
	s.reload(node.Membership{Nodes: addrsOf(staying)}, staying...)
	s.expectPops(timers)
}

// scaleUpThenRetireOriginals proves 2 -> 4 -> the two new nodes: after a
// scale up and a scale down that removes both original nodes, the two new
// nodes hold all 100 timers, and once the originals are stopped every
// timer pops exactly once, so from the new nodes.
func scaleUpThenRetireOriginals(s *scaling) {
	old := s.start(2, func(addrs []string) node.Membership { return node.Membership{Nodes: addrs} })
	timers := s.create(old, 2)

	added := s.grow(old, 2)
	all := slices.Concat(old, added)
	s.reload(node.Membership{Nodes: addrsOf(all)}, all...)
	s.expectHeld(timers, 2, all)

	s.shrink(added, old)
	s.expectHeld(timers, 2, all)

	s.stop(old...)
	s.reload(node.Membership{Nodes: addrsOf(added)}, added...)
	s.expectPops(timers)
}

// scaleUpOneToTwoThenKillFirst proves 1 -> 2 nodes followed by the loss
// of the first: timers created on a lone node with the default
// replication factor are copied to the joining node by the scale, so
// once the first node is killed with SIGKILL the second pops every one of
// them exactly once.
func scaleUpOneToTwoThenKillFirst(s *scaling) {
	first := s.start(1, func(addrs []string) node.Membership { return node.Membership{Nodes: addrs} })
	timers := s.create(first, 0)

	second := s.grow(first, 1)
	both := slices.Concat(first, second)
	s.reload(node.Membership{Nodes: addrsOf(both)}, both...)
	s.expectHeld(timers, wire.DefaultReplicationFactor, both)

	s.kill(first[0])
	s.expectPops(timers)
}

// scaleRestartRepopulates proves that a node killed with SIGKILL and
// restarted with the same configuration gets its timers back: its
// start-up resync completes, GET /status and chronos_timers count all
// 100 again (three nodes, replication factor 3), and once both its peers
// are stopped it pops every timer exactly once.
func scaleRestartRepopulates(s *scaling) {
	m := func(addrs []string) node.Membership { return node.Membership{Nodes: addrs} }
	all := s.start(3, m)
	timers := s.create(all, 3)
	victim, peers := all[0], all[1:]
	s.expectHeld(timers, 3, all)

	s.kill(victim)
	victim = s.restart(victim)
	s.awaitResync(m(addrsOf(all)), victim)
	s.expectHeld(timers, 3, []*process{victim})
	if got := s.metric(victim, "chronos_timers"); got != float64(len(timers)) {
		s.t.Fatalf("%s after its restart: chronos_timers %v, want %d", victim.addr, got, len(timers))
	}

	s.stop(peers...)
	s.expectPops(timers)
}

// scaling is one scenario's cluster: its processes, the client that
// drives them, and the client's callback endpoint.
type scaling struct {
	t      *testing.T
	bin    string
	key    string // the [cluster] key of every node, or none
	rec    *recorder
	client *http.Client
	began  time.Time
}

func newScaling(t *testing.T, bin, key string) *scaling {
	return &scaling{t: t, bin: bin, key: key, rec: newRecorder(t), client: &http.Client{Timeout: clusterWait}, began: time.Now()}
}

// logf logs a step with the time since the scenario started.
func (s *scaling) logf(format string, args ...any) {
	s.t.Helper()
	s.t.Logf("%6.2fs "+format, append([]any{time.Since(s.began).Seconds()}, args...)...)
}

// scaleTimer is one timer a scenario created.
type scaleTimer struct {
	opaque string
	id     uint64
	due    time.Time // when its create was sent, plus its interval
}

// create creates the scenario's timers through the given nodes in turn,
// with replication factor rf (0: the node's default), each popping once.
// The last is a sentinel, due after any duplicate pop of the others, from
// a replica ranked up to rf-1, would have arrived: once it has popped,
// the pops are complete. It is scaled with the others.
func (s *scaling) create(through []*process, rf int) []scaleTimer {
	s.t.Helper()
	timers := make([]scaleTimer, scaleTimers+1)
	for i := range timers {
		secs := int(scaleInterval/time.Second) + i%scaleSpread
		opaque := fmt.Sprintf("timer-%03d", i)
		if i == scaleTimers {
			secs = int(scaleInterval/time.Second) + scaleSpread - 1 + staleHorizon(0, cmp.Or(rf, wire.DefaultReplicationFactor))
			opaque = "sentinel"
		}
		body := timerBody(secs, secs, s.rec.url, opaque)
		if rf > 0 {
			body = clusterTimer{opaque: opaque, interval: secs, repeatFor: secs, rf: rf}.body(s.rec.url)
		}
		p := through[i%len(through)]
		sent := time.Now()
		status, loc := do(s.t, s.client, http.MethodPost, p.url+"/timers", body)
		if status != http.StatusOK || !isTimerPath(loc) {
			s.t.Fatalf("POST /timers %s to %s: status %d Location %q, want 200 and /timers/<32 hex digits>", opaque, p.addr, status, loc)
		}
		id, _, err := wire.ParseWireID(strings.TrimPrefix(loc, "/timers/"))
		if err != nil {
			s.t.Fatal(err)
		}
		timers[i] = scaleTimer{opaque: opaque, id: id, due: sent.Add(time.Duration(secs) * time.Second)}
	}
	s.logf("created %d timers and a sentinel through %v", scaleTimers, addrsOf(through))
	return timers
}

// grow runs the scale up: n new nodes start with the scale configuration
// (old as node, themselves as joining), the old nodes reload it, and every
// node's resync completes. It returns the new nodes.
func (s *scaling) grow(old []*process, n int) []*process {
	s.t.Helper()
	var m node.Membership
	added := s.start(n, func(addrs []string) node.Membership {
		m = node.Membership{Nodes: addrsOf(old), Joining: addrs}
		return m
	})
	s.reload(m, old...)
	s.awaitResync(m, slices.Concat(old, added)...)
	s.logf("scaled up: %v joined %v", m.Joining, m.Nodes)
	return added
}

// shrink runs the scale down: every node reloads the scale configuration
// (staying as node, leaving as leaving), and the staying nodes' resyncs
// complete.
func (s *scaling) shrink(staying, leaving []*process) {
	s.t.Helper()
	m := node.Membership{Nodes: addrsOf(staying), Leaving: addrsOf(leaving)}
	s.reload(m, slices.Concat(staying, leaving)...)
	s.awaitResync(m, staying...)
	s.logf("scaled down: %v leaving, %v staying", m.Leaving, m.Nodes)
}

// reload writes membership m into each node's cluster file, sends each a
// SIGHUP, and waits until GET /status shows each running with m.
func (s *scaling) reload(m node.Membership, ps ...*process) {
	s.t.Helper()
	for _, p := range ps {
		if err := os.WriteFile(p.clusterPath, []byte(clusterConf(p.addr, m, s.key)), 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	s.hup(m, ps...)
}

// hup sends each node a SIGHUP, to reload the membership m its cluster
// file now holds, and waits until GET /status shows each running with m.
func (s *scaling) hup(m node.Membership, ps ...*process) {
	s.t.Helper()
	for _, p := range ps {
		p.signal(s.t, syscall.SIGHUP)
	}
	for _, p := range ps {
		s.awaitStatus(p, fmt.Sprintf("membership %+v", m), func(st observe.Status) (bool, error) {
			return slices.Equal(st.Nodes, m.Nodes) && slices.Equal(st.Joining, m.Joining) && slices.Equal(st.Leaving, m.Leaving), nil
		})
	}
	s.logf("reloaded %v with %+v", addrsOf(ps), m)
}

// resyncAgain sends SIGUSR1 to each node, the original procedure's second
// step, and waits until the resync it starts has completed.
func (s *scaling) resyncAgain(m node.Membership, ps ...*process) {
	s.t.Helper()
	runs := make([]uint64, len(ps))
	for i, p := range ps {
		runs[i] = s.status(p).Resync.Runs
		p.signal(s.t, syscall.SIGUSR1)
	}
	view := viewOf(m)
	for i, p := range ps {
		s.awaitStatus(p, "a completed resync after SIGUSR1", func(st observe.Status) (bool, error) {
			return resyncDone(st, view, runs[i]+1)
		})
	}
	s.logf("resynced %v again", addrsOf(ps))
}

// awaitResync waits until each node's latest resync has completed to the
// view of m, and fails at once if it gave up on a peer.
func (s *scaling) awaitResync(m node.Membership, ps ...*process) {
	s.t.Helper()
	view := viewOf(m)
	for _, p := range ps {
		s.awaitStatus(p, "resync completed to view "+view, func(st observe.Status) (bool, error) {
			return resyncDone(st, view, 1)
		})
	}
}

// resyncDone reports whether st's latest resync, at least the minRuns-th,
// has completed to view; an incomplete one is an error.
func resyncDone(st observe.Status, view string, minRuns uint64) (bool, error) {
	r := st.Resync
	if st.ViewID != view || r.ViewID != view || r.Runs < minRuns {
		return false, nil
	}
	switch r.State {
	case "completed":
		return true, nil
	case "incomplete":
		return false, fmt.Errorf("resync incomplete, failed peers %v", r.FailedPeers)
	}
	return false, nil
}

// viewOf is the cluster view ID GET /status reports for membership m: new
// timers go to the steady and joining nodes.
func viewOf(m node.Membership) string {
	return strconv.FormatUint(node.NewRing(slices.Concat(m.Nodes, m.Joining)).ViewID(), 10)
}

// awaitStatus polls p's GET /status until cond holds, for at most
// scaleWait; an error from cond, or the deadline, fails the test with the
// last status seen.
func (s *scaling) awaitStatus(p *process, what string, cond func(observe.Status) (bool, error)) {
	s.t.Helper()
	deadline := time.Now().Add(scaleWait)
	var last string
	for {
		st, raw, err := getStatus(s.client, p)
		if err == nil {
			last = raw
			done, cerr := cond(st)
			if cerr != nil {
				s.t.Fatalf("%s: waiting for %s: %v; status:\n%s", p.addr, what, cerr, raw)
			}
			if done {
				return
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: no %s within %v; last status:\n%s", p.addr, what, scaleWait, last)
		}
		time.Sleep(statusPoll)
	}
}

// status returns p's GET /status.
func (s *scaling) status(p *process) observe.Status {
	s.t.Helper()
	st, _, err := getStatus(s.client, p)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

// getStatus returns p's GET /status, parsed and as sent.
func getStatus(c *http.Client, p *process) (observe.Status, string, error) {
	var st observe.Status
	resp, err := c.Get(p.url + observe.StatusPath)
	if err != nil {
		return st, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return st, string(raw), fmt.Errorf("GET %s%s: status %d", p.url, observe.StatusPath, resp.StatusCode)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, string(raw), fmt.Errorf("GET %s%s: %w", p.url, observe.StatusPath, err)
	}
	return st, string(raw), nil
}

// metric returns the value of the unlabelled metric name on p's
// GET /metrics.
func (s *scaling) metric(p *process, name string) float64 {
	s.t.Helper()
	resp, err := s.client.Get(p.url + observe.MetricsPath)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.t.Fatalf("%s: metric line %q: %v", p.addr, sc.Text(), err)
			}
			return f
		}
	}
	s.t.Fatalf("%s: GET %s has no %s (err %v)", p.addr, observe.MetricsPath, name, sc.Err())
	return 0
}

// expectHeld fails unless each of ps holds, by GET /status, exactly the
// live timers that the ring of the steady and joining nodes places on it
// with replication factor rf: leaving nodes none. No timer may have
// popped yet.
func (s *scaling) expectHeld(timers []scaleTimer, rf int, ps []*process) {
	s.t.Helper()
	if pops := s.rec.snapshot(); len(pops) > 0 {
		s.t.Fatalf("%d pops (first %+v) before the scale was done, %v after the first timer was due: "+
			"the scale must finish within scaleInterval (%v) for the test to show the timers moved",
			len(pops), pops[0], time.Since(timers[0].due), scaleInterval)
	}
	st := s.status(ps[0])
	ring := node.NewRing(slices.Concat(st.Nodes, st.Joining))
	want := map[string]int{}
	for _, tm := range timers {
		for _, r := range ring.Replicas(tm.id, rf) {
			want[r]++
		}
	}
	for _, p := range ps {
		if got := s.status(p).Timers; got != want[p.addr] {
			s.t.Errorf("%s holds %d live timers, want %d (placement %v of ring %v, rf %d)",
				p.addr, got, want[p.addr], want, slices.Concat(st.Nodes, st.Joining), rf)
		}
	}
	if s.t.Failed() {
		s.t.FailNow()
	}
	s.logf("held as placed: %v", want)
}

// expectPops waits until every timer has popped, the sentinel last, and
// fails unless each popped exactly once, with X-Sequence-Number 1.
func (s *scaling) expectPops(timers []scaleTimer) {
	s.t.Helper()
	sentinel := timers[len(timers)-1]
	s.rec.awaitPopped(len(timers), time.Until(sentinel.due)+scaleWait)
	seqs := map[string][]string{}
	for _, p := range s.rec.snapshot() {
		seqs[p.body] = append(seqs[p.body], p.seq)
	}
	var missing, wrong []string
	for _, tm := range timers {
		switch got := seqs[tm.opaque]; {
		case len(got) == 0:
			missing = append(missing, fmt.Sprintf("%s (%s)", tm.opaque, wire.FormatID(tm.id)))
		case !slices.Equal(got, []string{"1"}):
			wrong = append(wrong, fmt.Sprintf("%s (%s) %v", tm.opaque, wire.FormatID(tm.id), got))
		}
	}
	if len(missing) > 0 {
		s.t.Errorf("%d of %d timers never popped: %v; want every timer to pop once", len(missing), len(timers), missing)
	}
	if len(wrong) > 0 {
		s.t.Errorf("%d of %d timers popped with these sequence numbers: %v; want [1]", len(wrong), len(timers), wrong)
	}
	s.logf("checked: %d of %d timers popped exactly once", len(timers)-len(missing)-len(wrong), len(timers))
}

// stop sends each node SIGTERM and waits until it has exited cleanly.
func (s *scaling) stop(ps ...*process) {
	s.t.Helper()
	for _, p := range ps {
		p.signal(s.t, syscall.SIGTERM)
	}
	for _, p := range ps {
		select {
		case <-p.proc.Done():
			if err := p.proc.Err(); err != nil {
				s.t.Errorf("%s exit after SIGTERM: %v, want status 0", p.addr, err)
			}
		case <-time.After(scaleWait):
			s.t.Fatalf("%s still running %v after SIGTERM", p.addr, scaleWait)
		}
	}
	s.logf("stopped %v", addrsOf(ps))
}

// kill kills p with SIGKILL and waits until it is gone.
func (s *scaling) kill(p *process) {
	s.t.Helper()
	p.signal(s.t, syscall.SIGKILL)
	select {
	case <-p.proc.Done():
	case <-time.After(scaleWait):
		s.t.Fatalf("%s still running %v after SIGKILL", p.addr, scaleWait)
	}
	s.logf("killed %s", p.addr)
}

// restart starts p's binary again with the same files, so on the same
// address, and waits until it serves.
func (s *scaling) restart(p *process) *process {
	s.t.Helper()
	q, err := launch(s.t, s.bin, p.addr, p.localPath, p.clusterPath)
	if err != nil {
		s.t.Fatal(err)
	}
	s.logf("restarted %s", p.addr)
	return q
}

// start starts n nodes on free loopback ports, each with the membership
// m gives for their addresses, and waits until all serve. If another
// process takes a port between our probe and the bind, it starts them all
// again on other ports (no other node knows their addresses yet).
func (s *scaling) start(n int, m func(addrs []string) node.Membership) []*process {
	s.t.Helper()
	ps := startMembers(s.t, n, func(addrs []string, i int) (*process, error) {
		return startScaleNode(s.t, s.bin, addrs[i], m(addrs), s.key)
	})
	s.logf("started %v with %+v", addrsOf(ps), m(addrsOf(ps)))
	return ps
}

// startScaleNode writes a node's two files, as the original's deployments
// do (no instance_id: each node derives its number from the membership),
// and starts it.
func startScaleNode(t *testing.T, bin, addr string, m node.Membership, key string) (*process, error) {
	t.Helper()
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(addr)
	localPath, clusterPath := filepath.Join(dir, "chronos.conf"), filepath.Join(dir, "chronos_cluster.conf")
	local := fmt.Sprintf("[http]\nbind-address = %s\nbind-port = %s\n\n[logging]\nlevel = 3\n", host, port)
	if err := os.WriteFile(localPath, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clusterPath, []byte(clusterConf(addr, m, key)), 0o600); err != nil {
		t.Fatal(err)
	}
	return launch(t, bin, addr, localPath, clusterPath)
}

// clusterConf is a node's chronos_cluster.conf for membership m.
func clusterConf(self string, m node.Membership, key string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[cluster]\nlocalhost = %s\n", self)
	for _, l := range []struct {
		key   string
		addrs []string
	}{{"node", m.Nodes}, {"joining", m.Joining}, {"leaving", m.Leaving}} {
		for _, a := range l.addrs {
			fmt.Fprintf(&b, "%s = %s\n", l.key, a)
		}
	}
	if key != "" {
		fmt.Fprintf(&b, "key = %s\n", key)
	}
	return b.String()
}

// launch starts bin with the original's two file flags and waits until it
// serves on addr. The process is killed when the test ends, and its log
// shown if the test failed.
func launch(t *testing.T, bin, addr, localPath, clusterPath string) (*process, error) {
	t.Helper()
	p := &process{url: "http://" + addr, addr: addr, localPath: localPath, clusterPath: clusterPath}
	if err := p.start(t, bin, scaleWait); err != nil {
		return nil, err
	}
	return p, nil
}

func addrsOf(ps []*process) []string {
	addrs := make([]string, len(ps))
	for i, p := range ps {
		addrs[i] = p.addr
	}
	return addrs
}
