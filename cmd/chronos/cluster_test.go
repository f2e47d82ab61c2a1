//go:build unix

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	"github.com/chronos-timer/chronos/wire"
)

// clusterWait bounds every wait of the cluster test. Generous: three
// processes share a possibly loaded machine, and a failover pop comes
// node.ReplicaSkew per rank after its due time. It is a ceiling against
// hangs, never a measured timing.
const clusterWait = 30 * time.Second

// TestClusterLoopback proves three production binaries forming one
// cluster on loopback: timers created through one node pop, an update
// through a second node and a delete through the third stop every pop of
// the old definition, and after one process is killed with SIGKILL every
// remaining pop of every live timer is still delivered (each sequence
// number 1..N at least once, duplicates only of the same sequence number,
// none beyond N).
func TestClusterLoopback(t *testing.T) {
	t.Parallel() // waits on real timers, not on the CPU (Makefile: -parallel)
	bin := proctest.Chronos(t)
	rec := newRecorder(t)
	members := startCluster(t, bin, 3, configuredIDs)
	a, b, c := members[0], members[1], members[2]
	addrs := []string{a.addr, b.addr, c.addr}
	ring := node.NewRing(addrs)
	client := &http.Client{Timeout: clusterWait}

	create := func(p *process, spec clusterTimer) string {
		t.Helper()
		status, loc := do(t, client, http.MethodPost, p.url+"/timers", spec.body(rec.url))
		if status != http.StatusOK || !isTimerPath(loc) {
			t.Fatalf("POST /timers %s to %s: status %d Location %q, want 200 and /timers/<32 hex digits>", spec.opaque, p.addr, status, loc)
		}
		return loc
	}

	// Create through a the timers to update and to delete.
	old := clusterTimer{opaque: "old", interval: 2, repeatFor: 60, rf: 2}
	doomed := clusterTimer{opaque: "doomed", interval: 2, repeatFor: 60, rf: 3}
	oldLoc := create(a, old)
	doomedLoc := create(a, doomed)

	// Update through b right after a pop of the old definition, so that
	// its next pop is an interval away: from the moment the PUT returns,
	// no pop of "old" may arrive.
	updated := clusterTimer{opaque: "updated", interval: 1, repeatFor: 20, rf: 2}
	rec.awaitNext(t, old.opaque)
	status, updatedLoc := do(t, client, http.MethodPut, b.url+oldLoc, updated.body(rec.url))
	if status != http.StatusOK || !isTimerPath(updatedLoc) {
		t.Fatalf("PUT %s to %s: status %d Location %q, want 200 and a timer path", oldLoc, b.addr, status, updatedLoc)
	}
	rec.forbid(old.opaque)

	// Delete through c, likewise right after a pop.
	rec.awaitNext(t, doomed.opaque)
	if status, _ := do(t, client, http.MethodDelete, c.url+doomedLoc, ""); status != http.StatusOK {
		t.Fatalf("DELETE %s to %s: status %d, want 200", doomedLoc, c.addr, status)
	}
	rec.forbid(doomed.opaque)

	// A read through any node finds the update, and not the deleted timer.
	read := func(p *process, loc string) (int, string) {
		t.Helper()
		resp, err := client.Get(p.url + loc)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	if status, body := read(c, updatedLoc); status != http.StatusOK || !strings.Contains(body, `"opaque":"updated"`) {
		t.Fatalf("GET %s through %s: status %d body %s, want 200 with the update", updatedLoc, c.addr, status, body)
	}
	if status, body := read(a, doomedLoc); status != http.StatusNotFound {
		t.Fatalf("GET %s through %s: status %d body %s, want 404 once deleted", doomedLoc, a.addr, status, body)
	}

	// A sentinel due after the next pop of either old definition would
	// have been, even from the last-ranked replica: when it pops, such a
	// pop would already have arrived.
	sentinel := clusterTimer{opaque: "sentinel-1", interval: staleHorizon(2, 3), rf: 3}
	create(c, sentinel)
	rec.awaitSeq(t, sentinel.opaque, 1)

	// Live timers across the kill, created through a as well.
	live := []clusterTimer{
		updated,
		{opaque: "live-1", interval: 1, repeatFor: 12, rf: 2},
		{opaque: "live-2", interval: 2, repeatFor: 16, rf: 2},
		{opaque: "live-3", interval: 1, repeatFor: 12, rf: 3},
	}
	locs := map[string]string{updated.opaque: updatedLoc}
	for _, lt := range live[1:] {
		locs[lt.opaque] = create(a, lt)
	}
	// Kill the primary of live-1, so at least one timer must fail over.
	// The ring the test computes must agree with the node's: the bloom
	// filter in each Location names the replicas the node chose.
	primaries := map[string]string{}
	for _, lt := range live {
		id, bloom, err := wire.ParseWireID(strings.TrimPrefix(locs[lt.opaque], "/timers/"))
		if err != nil {
			t.Fatal(err)
		}
		replicas := ring.Replicas(id, lt.rf)
		if got := ring.Bloom(replicas); got != bloom {
			t.Fatalf("timer %s: Location bloom %016x, but replicas %v give %016x", lt.opaque, bloom, replicas, got)
		}
		primaries[lt.opaque] = replicas[0]
	}
	victim := members[slices.Index(addrs, primaries["live-1"])]
	var survivor *process
	for _, m := range members {
		if m != victim {
			survivor = m
			break
		}
	}
	t.Logf("primaries %v; killing %s", primaries, victim.addr)
	// Kill right after live-1's first pop, so that most of its pops are
	// still due.
	rec.awaitSeq(t, "live-1", 1)
	victim.signal(t, syscall.SIGKILL)
	select {
	case <-victim.proc.Done():
	case <-time.After(clusterWait):
		t.Fatalf("%s still running %v after SIGKILL", victim.addr, clusterWait)
	}

	// Every pop of every live timer arrives, from a survivor if need be.
	for _, lt := range live {
		for seq := 1; seq <= lt.pops(); seq++ {
			rec.awaitSeq(t, lt.opaque, seq)
		}
	}

	// A last sentinel, written through a survivor, due after any late
	// duplicate or stale pop would have come: then check everything that
	// arrived.
	final := clusterTimer{opaque: "sentinel-2", interval: staleHorizon(2, 3), rf: 3}
	create(survivor, final)
	rec.awaitSeq(t, final.opaque, 1)

	limits := map[string]int{sentinel.opaque: 1, final.opaque: 1}
	for _, lt := range live {
		limits[lt.opaque] = lt.pops()
	}
	rec.check(t, limits)
}

// staleHorizon is a one-shot interval, in seconds, that puts a sentinel
// created right after a pop of a timer with the given interval after that
// timer's next pop from any of rf replicas, with a second to spare.
func staleHorizon(interval, rf int) int {
	return interval + int(node.ReplicaSkew/time.Second)*(rf-1) + 2
}

// clusterTimer is a client timer definition with a replication factor.
type clusterTimer struct {
	opaque              string
	interval, repeatFor int // seconds; repeatFor 0 means a one-shot
	rf                  int
}

func (ct clusterTimer) body(uri string) string {
	timing := fmt.Sprintf(`"interval":%d`, ct.interval)
	if ct.repeatFor > 0 {
		timing += fmt.Sprintf(`,"repeat-for":%d`, ct.repeatFor)
	}
	return fmt.Sprintf(`{"timing":{%s},"callback":{"http":{"uri":%q,"opaque":%q}},"reliability":{"replication-factor":%d}}`,
		timing, uri, ct.opaque, ct.rf)
}

// pops is N, the number of pops of the definition.
func (ct clusterTimer) pops() int {
	if ct.repeatFor == 0 {
		return 1
	}
	return ct.repeatFor / ct.interval
}

// recorder is the client's callback endpoint: it keeps every pop in
// arrival order with the time it arrived, counts the pops of each opaque,
// and notes any pop of a definition after it was forbidden (its update or
// delete returned).
type recorder struct {
	url       string
	mu        sync.Mutex
	pops      []pop
	at        []time.Time // at[i] is when pops[i] arrived, on this process's clock
	popped    map[string]int
	forbidden map[string]bool
	late      []pop
	changed   chan struct{} // closed and replaced on every pop
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{popped: map[string]int{}, forbidden: map[string]bool{}, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(req.Body)
		p := pop{string(body), req.Header.Get("X-Sequence-Number")}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.pops = append(r.pops, p)
		r.at = append(r.at, at)
		r.popped[p.body]++
		if r.forbidden[p.body] {
			r.late = append(r.late, p)
		}
		close(r.changed)
		r.changed = make(chan struct{})
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/cb"
	return r
}

// forbid makes every later pop of opaque a failure.
func (r *recorder) forbid(opaque string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forbidden[opaque] = true
}

// await fails unless cond holds of the pops from index from on within
// clusterWait.
func (r *recorder) await(t *testing.T, what string, from int, cond func(p pop) bool) {
	t.Helper()
	deadline := time.After(clusterWait)
	for {
		r.mu.Lock()
		found, changed := false, r.changed
		for _, p := range r.pops[from:] {
			if cond(p) {
				found = true
				break
			}
		}
		r.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no pop %s within %v; pops so far: %v", what, clusterWait, r.snapshot())
		}
	}
}

// awaitSeq waits for a pop of opaque with sequence number seq, however
// long ago it arrived.
func (r *recorder) awaitSeq(t *testing.T, opaque string, seq int) {
	t.Helper()
	want := pop{opaque, strconv.Itoa(seq)}
	r.await(t, fmt.Sprintf("%+v", want), 0, func(p pop) bool { return p == want })
}

// awaitNext waits for a pop of opaque that arrives after the call.
func (r *recorder) awaitNext(t *testing.T, opaque string) {
	t.Helper()
	r.mu.Lock()
	from := len(r.pops)
	r.mu.Unlock()
	r.await(t, "of "+opaque, from, func(p pop) bool { return p.body == opaque })
}

// awaitPopped waits until n distinct opaques have popped at least once,
// or until timeout has passed; the caller checks which pops arrived.
func (r *recorder) awaitPopped(n int, timeout time.Duration) {
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		done, changed := len(r.popped) >= n, r.changed
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			return
		}
	}
}

func (r *recorder) snapshot() []pop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pop(nil), r.pops...)
}

// arrivals returns every pop so far with the time it arrived.
func (r *recorder) arrivals() ([]pop, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pop(nil), r.pops...), append([]time.Time(nil), r.at...)
}

// check fails on any pop after its definition was forbidden, and on any
// pop of a timer in limits whose sequence number is not in 1..N.
func (r *recorder) check(t *testing.T, limits map[string]int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.late {
		t.Errorf("pop %+v arrived after its definition was updated or deleted", p)
	}
	for _, p := range r.pops {
		n, ok := limits[p.body]
		if !ok {
			continue
		}
		if seq, err := strconv.Atoi(p.seq); err != nil || seq < 1 || seq > n {
			t.Errorf("pop %+v: X-Sequence-Number outside 1..%d", p, n)
		}
	}
	if t.Failed() {
		t.Logf("all pops: %v", r.pops)
		return
	}
	counts := map[string]int{}
	for _, p := range r.pops {
		counts[p.body]++
	}
	t.Logf("pops per opaque (duplicates included): %v", counts)
}

// instanceIDs says how the members of a test cluster get their instance
// numbers.
type instanceIDs int

const (
	// configuredIDs gives each member an [identity] instance_id of its own
	// that no member derives (see configuredID).
	configuredIDs instanceIDs = iota
	// derivedIDs configures no instance_id anywhere, as a cluster
	// configured with addresses only: each member derives its number from
	// the membership.
	derivedIDs
)

// startCluster starts n processes of bin as one cluster on free loopback
// ports, with instance numbers as ids says, and waits until all serve.
func startCluster(t *testing.T, bin string, n int, ids instanceIDs) []*process {
	t.Helper()
	return startMembers(t, n, func(addrs []string, i int) (*process, error) {
		return tryStartMember(t, bin, addrs, i, ids)
	})
}

// configuredID is the instance number member i is configured with: the
// (i+1)-th lowest number no member of addrs derives, since the node
// refuses to start with a number another member derives (and ports, so
// derived numbers, differ from run to run).
func configuredID(t *testing.T, addrs []string, i int) int {
	derived, err := node.InstanceIDs(node.Membership{Nodes: addrs})
	if err != nil {
		t.Fatal(err)
	}
	taken := map[int]bool{}
	for _, id := range derived {
		taken[id] = true
	}
	id := 0
	for n := 0; ; id++ {
		if !taken[id] {
			if n == i {
				return id
			}
			n++
		}
	}
}

// tryStartMember starts member i of the cluster of addrs, with an
// instance_id of its own if ids is configuredIDs, and waits until it
// serves.
func tryStartMember(t *testing.T, bin string, addrs []string, i int, ids instanceIDs) (*process, error) {
	dir := t.TempDir()
	addr := addrs[i]
	host, port, _ := net.SplitHostPort(addr)
	p := &process{
		url: "http://" + addr, addr: addr, clusterPath: filepath.Join(dir, "chronos_cluster.conf"),
		localPath: filepath.Join(dir, "chronos.conf"),
	}
	localPath := p.localPath
	local := fmt.Sprintf("[http]\nbind-address = %s\nbind-port = %s\n\n[logging]\nlevel = 3\n", host, port)
	if ids == configuredIDs {
		local += fmt.Sprintf("\n[identity]\ninstance_id = %d\n", configuredID(t, addrs, i))
	}
	if err := os.WriteFile(localPath, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	var cluster strings.Builder
	fmt.Fprintf(&cluster, "[cluster]\nlocalhost = %s\n", addr)
	for _, a := range addrs {
		fmt.Fprintf(&cluster, "node = %s\n", a)
	}
	if err := os.WriteFile(p.clusterPath, []byte(cluster.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.start(t, bin, clusterWait); err != nil {
		return nil, err
	}
	return p, nil
}
