//go:build unix

package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/client"
	"github.com/chronos-timer/chronos/internal/logtest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// sink is the application behind a Handler in the cluster tests: it keeps
// the sequence numbers delivered of each opaque data, and wakes waiters.
type sink struct {
	mu      sync.Mutex
	pops    map[string][]uint64
	changed chan struct{} // closed and replaced on every pop
	// onPop, if set, runs before a pop is taken.
	onPop func(client.Pop)
}

func newSink() *sink { return &sink{pops: map[string][]uint64{}, changed: make(chan struct{})} }

func (s *sink) take(_ context.Context, p client.Pop) error {
	if s.onPop != nil {
		s.onPop(p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pops[string(p.Opaque)] = append(s.pops[string(p.Opaque)], p.Seq)
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// await fails unless pop seq of opaque is delivered within processWait.
func (s *sink) await(t *testing.T, opaque string, seq uint64) {
	t.Helper()
	deadline := time.After(processWait)
	for {
		s.mu.Lock()
		got, changed := s.pops[opaque], s.changed
		s.mu.Unlock()
		for _, n := range got {
			if n == seq {
				return
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("pop %d of %q not delivered within %v; delivered %v", seq, opaque, processWait, s.delivered())
		}
	}
}

func (s *sink) delivered() map[string][]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]uint64{}
	for k, v := range s.pops {
		out[k] = append([]uint64(nil), v...)
	}
	return out
}

// serveSink serves a Handler over s on loopback and returns the handler
// and its callback URI.
func serveSink(t *testing.T, s *sink, cfg client.HandlerConfig) (*client.Handler, string) {
	t.Helper()
	h, err := client.NewHandler(cfg, s.take)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv.URL + "/pops"
}

func addresses(members []*process) []string {
	var addrs []string
	for _, m := range members {
		addrs = append(addrs, m.addr)
	}
	return addrs
}

// TestClusterWritesSurviveKill proves failover against three chronos
// processes: a client runs cycles of create, update and delete while the
// node it writes through is killed with SIGKILL, and every call succeeds;
// each update's definition pops (once, through the Handler), and no
// deleted timer and no replaced definition pops.
func TestClusterWritesSurviveKill(t *testing.T) {
	members := startCluster(t, 3)
	s := newSink()
	h, uri := serveSink(t, s, client.DefaultHandlerConfig())
	var retries logtest.Buffer
	c, err := client.New(addresses(members), client.WithLogger(slog.New(slog.NewTextHandler(&retries, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// Cycle i creates a timer due in an hour and updates it to pop at
	// once ("u<i>"), with rf 3, whose writes need a majority; then creates
	// a timer due in 3 s ("d<i>"), with rf 2, and deletes it.
	const deletedInterval = 3 * time.Second
	var deleted []client.ID // read once the cycles are done
	cycle := func(i int) error {
		id, err := c.Create(ctx, client.Timer{Interval: time.Hour, URI: uri, Opaque: fmt.Sprint("a", i), ReplicationFactor: 3})
		if err != nil {
			return fmt.Errorf("cycle %d: create: %w", i, err)
		}
		if _, err := c.Update(ctx, id, client.Timer{URI: uri, Opaque: fmt.Sprint("u", i), ReplicationFactor: 3}); err != nil {
			return fmt.Errorf("cycle %d: update: %w", i, err)
		}
		d, err := c.Create(ctx, client.Timer{Interval: deletedInterval, URI: uri, Opaque: fmt.Sprint("d", i), ReplicationFactor: 2})
		if err != nil {
			return fmt.Errorf("cycle %d: create: %w", i, err)
		}
		if err := c.Delete(ctx, d); err != nil {
			return fmt.Errorf("cycle %d: delete: %w", i, err)
		}
		deleted = append(deleted, d)
		return nil
	}
	// Cycles 0-2 run before the kill, 3-5 while it happens, 6-7 after it.
	// The client starts with the first node, and stays with it while it
	// answers: that is the node killed.
	const cycles = 8
	started, killed := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := range cycles {
			switch i {
			case 3:
				close(started)
			case 6:
				<-killed
			}
			if err := cycle(i); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	<-started
	members[0].kill(t)
	close(killed)
	if err := <-done; err != nil {
		t.Fatalf("%v; client log:\n%s", err, retries.String())
	}

	// A sentinel due after the next pop of any deleted timer would have
	// come even from its last replica: once it pops, none can come.
	sentinel := deletedInterval + node.ReplicaSkew + 2*time.Second
	if _, err := c.Create(ctx, client.Timer{Interval: sentinel, URI: uri, Opaque: "sentinel"}); err != nil {
		t.Fatal(err)
	}
	for i := range cycles {
		s.await(t, fmt.Sprint("u", i), 1)
	}
	s.await(t, "sentinel", 1)

	for opaque, seqs := range s.delivered() {
		switch {
		case strings.HasPrefix(opaque, "a") || strings.HasPrefix(opaque, "d"):
			t.Errorf("%q popped %v: a replaced or deleted definition", opaque, seqs)
		case len(seqs) != 1 || seqs[0] != 1:
			t.Errorf("%q delivered %v, want pop 1 once", opaque, seqs)
		}
	}
	checkReads(t, c, uri, members[0].addr, deleted)

	// The kill was met, not missed: a call failed over from the dead node.
	if log := retries.String(); !strings.Contains(log, "node="+members[0].addr) {
		t.Errorf("no retry away from the killed node %s; client log:\n%s", members[0].addr, log)
	}
	t.Logf("handler: %+v", h.Stats())
}

// checkReads proves Get against the cluster with the node dead killed:
// a timer created now reads back with its definition, no pop made, its
// next pop an interval after its create, live on the two survivors with
// one version and unreachable on dead; a deleted timer is not found.
func checkReads(t *testing.T, c *client.Client, uri, dead string, deleted []client.ID) {
	t.Helper()
	def := client.Timer{Interval: time.Hour, RepeatFor: 2 * time.Hour, URI: uri, Opaque: "read",
		ReplicationFactor: 3, Tags: []client.Tag{{Type: "CALL", Count: 2}}}
	before := time.Now()
	id, err := c.Create(t.Context(), def)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	info, err := c.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != id || !reflect.DeepEqual(info.Timer, def) || info.SequenceNumber != 0 {
		t.Errorf("Get = %+v, want %s with definition %+v and no pop made", info, id, def)
	}
	// The node rounds its start up to the millisecond; a second either
	// way allows for a wall clock step while the test runs.
	if lo, hi := before.Add(time.Hour-time.Second), after.Add(time.Hour+time.Second); info.NextPop.Before(lo) || info.NextPop.After(hi) {
		t.Errorf("next pop %v, want an hour after the create, %v to %v", info.NextPop, before.Add(time.Hour), after.Add(time.Hour))
	}
	versions := map[string]bool{}
	for _, r := range info.Replicas {
		switch {
		case r.Node == dead && r.State != client.StateUnreachable:
			t.Errorf("killed node %s reads %+v, want unreachable", dead, r)
		case r.Node != dead && (r.State != client.StateLive || r.Version == ""):
			t.Errorf("survivor reads %+v, want live with a version", r)
		case r.Node != dead:
			versions[r.Version] = true
		}
	}
	if len(info.Replicas) != 3 || len(versions) != 1 {
		t.Errorf("replicas %+v, want the killed node and two survivors of one version", info.Replicas)
	}
	for _, d := range deleted {
		if _, err := c.Get(t.Context(), d); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("Get of deleted %s = %v, want ErrNotFound", d, err)
		}
	}
}

// TestClusterDuplicatePopDropped makes a duplicate pop for real and
// proves the Handler drops it: a timer with rf 2 pops from its primary,
// and the application kills that primary with SIGKILL before answering,
// so its pop notice is never sent and the backup pops the same sequence
// number 2 s later. The application sees the pop once; the handler counts
// the backup's copy as a duplicate and answers it 200.
func TestClusterDuplicatePopDropped(t *testing.T) {
	members := startCluster(t, 3)
	addrs := addresses(members)
	ring := node.NewRing(addrs)

	var primary *process
	known := make(chan struct{}) // primary is set
	killed := make(chan struct{})
	s := newSink()
	s.onPop = func(p client.Pop) {
		<-known
		select {
		case <-killed:
		default:
			// Only the first copy: SIGKILL needs no test goroutine.
			primary.proc.Kill()
			close(killed)
		}
	}
	dups := make(chan client.Pop, 4)
	cfg := client.DefaultHandlerConfig()
	cfg.OnDuplicate = func(p client.Pop) { dups <- p }
	h, uri := serveSink(t, s, cfg)

	c, err := client.New(addrs)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Create(t.Context(), client.Timer{Interval: 2 * time.Second, URI: uri, Opaque: "once", ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	unique, bloom, err := wire.ParseWireID(string(id))
	if err != nil {
		t.Fatal(err)
	}
	replicas := ring.Replicas(unique, 2)
	if got := ring.Bloom(replicas); got != bloom {
		t.Fatalf("ID %s: bloom %016x, but the replicas %v give %016x", id, bloom, replicas, got)
	}
	for _, m := range members {
		if m.addr == replicas[0] {
			primary = m
		}
	}
	close(known)

	select {
	case dup := <-dups:
		if !dup.Of(id) || dup.Seq != 1 || string(dup.Opaque) != "once" {
			t.Errorf("duplicate %+v, want pop 1 of %s", dup, id)
		}
	case <-time.After(processWait):
		t.Fatalf("no duplicate within %v; handler %+v", processWait, h.Stats())
	}
	if got := s.delivered()["once"]; len(got) != 1 || got[0] != 1 {
		t.Errorf("application got pops %v, want pop 1 once", got)
	}
	if st := h.Stats(); st.Delivered != 1 || st.Duplicates != 1 || st.Refused != 0 {
		t.Errorf("handler %+v, want 1 delivered and 1 duplicate", st)
	}
	// The cluster still takes the delete, through the surviving nodes.
	if err := c.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
}
