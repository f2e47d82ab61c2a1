//go:build unix

package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/proctest"
)

// TestConcurrentCreatesAcrossAddressOnlyCluster proves that three
// production binaries configured with addresses only (no [identity]
// instance_id anywhere) never issue one ID twice and never lose an
// acknowledged create: 3,000 concurrent one-shot creates spread over the
// three nodes all answer 200 (a 503 is tried again) with distinct
// Locations and distinct unique IDs, every timer pops, and no pop arrives before its interval has passed
// since its create was sent. When every node defaulted to instance 0, nodes
// issued the same IDs in the same millisecond, and one create overwrote
// another's timer, which then never popped.
func TestConcurrentCreatesAcrossAddressOnlyCluster(t *testing.T) {
	const (
		creates = 3000
		workers = 48
		// popWait bounds the wait for the last pop after the last create
		// returned. Generous: a ceiling against hangs, never a measured
		// timing.
		popWait = 60 * time.Second
		// resolution: the nodes time pops by the wall clock, this test
		// by its monotonic clock, and the two may drift apart (an NTP
		// slew) while it runs; this much is allowed for that. The node's
		// own rule, never before arrival + interval by any fraction of a
		// millisecond, is proven on one clock by TestNeverEarlyBySubMillisecond
		// in node.
		resolution = time.Millisecond
		// createTries bounds the tries of one create answered 503, as
		// the Go client tries it again: a node whose replicas did not
		// answer within the replication timeout (a machine overloaded
		// by other work) says so with 503 rather than acknowledge a
		// write no replica holds. The try it gave up on may still land
		// and pop, which the checks below allow: a duplicate, and no
		// pop before the first try's interval.
		createTries = 5
	)
	bin := proctest.Chronos(t)
	rec := newRecorder(t)
	members := startCluster(t, bin, 3, derivedIDs)

	// Timer i is created through member i%3, one to three seconds out:
	// each member issues IDs for every interval.
	type create struct {
		opaque   string
		interval time.Duration
		member   *process
		sent     time.Time // of the first try
		tries    int
		status   int
		loc      string
		reason   string
		err      error
	}
	all := make([]create, creates)
	byOpaque := make(map[string]int, creates)
	for i := range all {
		all[i] = create{
			opaque:   fmt.Sprintf("create-%04d", i),
			interval: time.Duration(1+(i/3)%3) * time.Second,
			member:   members[i%3],
		}
		byOpaque[all[i].opaque] = i
	}
	client := &http.Client{
		Timeout:   clusterWait,
		Transport: &http.Transport{MaxIdleConnsPerHost: workers},
	}
	defer client.CloseIdleConnections()
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := &all[i]
				body := timerBody(int(c.interval/time.Second), 0, rec.url, c.opaque)
				c.sent = time.Now()
				for c.tries = 1; ; c.tries++ {
					c.status, c.loc, c.reason, c.err = request(client, http.MethodPost, c.member.url+"/timers", body)
					if c.err != nil || c.status != http.StatusServiceUnavailable || c.tries == createTries {
						break
					}
				}
			}
		}()
	}
	start := time.Now()
	for i := range all {
		next <- i
	}
	close(next)
	wg.Wait()
	retried := 0
	for _, c := range all {
		if c.tries > 1 {
			retried++
		}
	}
	t.Logf("%d creates through %d workers took %v; %d answered 503 and were tried again", creates, workers, time.Since(start), retried)

	// Every create answered 200 with a Location of its own and a unique ID
	// of its own.
	var failed []string
	for _, c := range all {
		switch {
		case c.err != nil:
			failed = append(failed, fmt.Sprintf("%s to %s: %v", c.opaque, c.member.addr, c.err))
		case c.status != http.StatusOK || !isTimerPath(c.loc):
			failed = append(failed, fmt.Sprintf("%s to %s: status %d Reason %q Location %q after %d tries", c.opaque, c.member.addr, c.status, c.reason, c.loc, c.tries))
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d creates failed, first %s; want every create 200 and /timers/<32 hex digits>", len(failed), creates, failed[0])
	}
	byLoc := map[string][]string{}
	byID := map[string][]string{}
	for _, c := range all {
		byLoc[c.loc] = append(byLoc[c.loc], c.opaque)
		id := strings.TrimPrefix(c.loc, "/timers/")[:16]
		byID[id] = append(byID[id], c.opaque)
	}
	if dup := shared(byLoc); len(dup) > 0 {
		t.Errorf("%d Locations answered to more than one create, e.g. %s; want %d distinct Locations", len(dup), dup[0], creates)
	}
	if dup := shared(byID); len(dup) > 0 {
		t.Errorf("%d unique IDs issued to more than one create, e.g. %s; want %d distinct IDs", len(dup), dup[0], creates)
	}

	// Wait until as many opaques have popped as there are timers. A pop
	// that came too early has arrived by the time its timer has popped, so
	// then every early pop is in.
	rec.awaitPopped(creates, popWait)

	// Every timer popped, none early, each pop with X-Sequence-Number 1
	// and of a timer the test created.
	pops, at := rec.arrivals()
	count := map[string]int{}
	var lateness []time.Duration
	var early, badSeq, unknown []string
	for k, p := range pops {
		i, ok := byOpaque[p.body]
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%+v", p))
			continue
		}
		c := all[i]
		count[p.body]++
		if p.seq != "1" {
			badSeq = append(badSeq, fmt.Sprintf("%s with X-Sequence-Number %q", p.body, p.seq))
		}
		late := at[k].Sub(c.sent.Add(c.interval))
		if late < -resolution {
			early = append(early, fmt.Sprintf("%s (interval %v through %s) %v after its create was sent", p.body, c.interval, c.member.addr, at[k].Sub(c.sent)))
		}
		if count[p.body] == 1 {
			lateness = append(lateness, late)
		}
	}
	var missing []string
	for _, c := range all {
		if count[c.opaque] == 0 {
			missing = append(missing, c.opaque)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d timers did not pop within %v of the last create, e.g. %v; want every timer to pop",
			len(missing), creates, popWait, missing[:min(len(missing), 5)])
	}
	if len(unknown) > 0 {
		t.Errorf("%d pops of no timer the test created, first %s; want none", len(unknown), unknown[0])
	}
	if len(badSeq) > 0 {
		t.Errorf("%d pops of one-shot timers, first %s; want X-Sequence-Number 1", len(badSeq), badSeq[0])
	}
	if len(early) > 0 {
		t.Errorf("%d pops arrived early, first %s; want none before send time + interval - %v", len(early), early[0], resolution)
	}

	// For information only: duplicates (a backup that did not hear of the
	// primary's pop in time) are allowed, and lateness is not asserted.
	repeated := 0
	for _, n := range count {
		if n > 1 {
			repeated++
		}
	}
	slices.Sort(lateness)
	if n := len(lateness); n > 0 {
		t.Logf("%d pops of %d timers; %d timers popped more than once; first-pop lateness p50 %v, p99 %v, max %v",
			len(pops), len(count), repeated, lateness[n/2], lateness[n*99/100], lateness[n-1])
	}
}

// shared returns, sorted, one line for every key that more than one
// create received.
func shared(by map[string][]string) []string {
	var dup []string
	for k, opaques := range by {
		if len(opaques) > 1 {
			dup = append(dup, fmt.Sprintf("%s to %v", k, opaques))
		}
	}
	slices.Sort(dup)
	return dup
}
