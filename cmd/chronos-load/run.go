package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// timerRec is what the tool knows of one timer it created: when its
// create was sent and answered, and its interval. Pop k (1-based) is
// early if it arrives before sent+k*interval (the node got the request
// after it was sent), and its lateness is measured from
// answered+k*interval (the latest the node can have got it).
type timerRec struct {
	sent, answered time.Time
	interval       time.Duration
	status         int
}

// run performs one measurement.
func run(o options, log io.Writer) (rep *report, err error) {
	sk, err := startSink(o.timers, o.pops, o.sinkWorkers, o.sinkService)
	if err != nil {
		return nil, err
	}
	defer sk.close()
	targets := splitTargets(o.targets)
	var pids []int
	var c *cluster
	var prof *profiles // with -join, started at the join
	if len(targets) == 0 {
		bin := o.bin
		if bin == "" {
			dir, err := os.MkdirTemp("", "chronos-load-bin-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
			fmt.Fprintln(log, "building cmd/chronos ...")
			if bin, err = buildChronos(dir); err != nil {
				return nil, err
			}
		}
		var pprof []string
		if c, pprof, err = startCluster(bin, o.nodes, o.join, o.memoryLimit, o.gcHeadroom, o.storage, o.profile != ""); err != nil {
			return nil, err
		}
		defer func() { c.stop(err != nil) }()
		if o.profile != "" && o.join > 0 {
			// A join is profiled from the join on (join.go); the
			// deferred finish runs before the stop.
			prof = &profiles{dir: o.profile, addrs: pprof, log: log}
			defer prof.finish()
		} else if o.profile != "" {
			// Deferred after the stop, so it runs first: the nodes
			// still serve their profiles.
			prof = startProfiles(o.profile, pprof, log)
			defer prof.finish()
		}
		targets, pids = c.Addrs(), c.pids()
		fmt.Fprintf(log, "started %d node(s): %s\n", len(targets), strings.Join(targets, " "))
	}
	rep = &report{opts: o, nodes: len(targets), load: [2]string{loadAverage()}}
	defer func() {
		if rep != nil {
			rep.load[1] = loadAverage()
		}
	}()
	rssBefore := sumRSS(pids)
	if o.hold && o.bare {
		// -bare: the create baseline of an unpaced -hold run, in a
		// process of its own, while the nodes are idle.
		if rep.bareCreateTime, err = bareCreatesOwn(o, sk.url); err != nil {
			return nil, err
		}
	}
	if !o.hold {
		// The create baselines, in the same run and next to the creates
		// they are compared with, while the nodes are idle.
		if rep.bareCreateTime, rep.bareHereTime, err = bareCreates(o, sk.url); err != nil {
			return nil, err
		}
	}

	// Creates are paced across the window: timer i's create is sent no
	// sooner than start + i*window/timers with an interval of lead, so it
	// falls due lead after it was sent and the timers fall due across the
	// window (intervals are whole seconds, so only the sending time can
	// spread them). When the nodes take creates more slowly than that,
	// the creates fall behind the pace and the due times spread over the
	// time they took instead; the report says which it was.
	lead := o.lead
	if lead == 0 {
		// Long enough for every create to be answered before the first
		// pop: creates run at 10,000/s or more here.
		lead = time.Duration(o.timers/5000+3)*time.Second + o.window.Truncate(time.Second)
	}
	secs := int64(lead / time.Second)
	recs := make([]timerRec, o.timers)
	cpuBefore := sumCPU(pids)
	client := newClient(o.concurrency)
	start := time.Now()
	var behind atomic.Int64 // the most a create was sent after its slot
	parallel(o.timers, o.concurrency, func(i int) {
		s := secs + int64(i)%(int64(o.spread/time.Second)+1)
		spec := wire.Timer{Interval: time.Duration(s) * time.Second, RepeatFor: time.Duration(int64(o.pops)*s) * time.Second,
			URI: sk.url, Opaque: "l" + strconv.Itoa(i), ReplicationFactor: o.rf}
		interval := time.Duration(s) * time.Second
		if o.hold {
			spec, interval = holdSpec(sk.url, i, o.rf), holdSecs*time.Second
		} else {
			slot := start.Add(time.Duration(int64(o.window) * int64(i) / int64(o.timers)))
			time.Sleep(time.Until(slot))
			storeMax(&behind, int64(time.Since(slot)))
		}
		body := wire.Encode(spec)
		sent := time.Now()
		status := post(client, "http://"+targets[i%len(targets)]+"/timers", body)
		recs[i] = timerRec{sent: sent, answered: time.Now(), interval: interval, status: status}
	})
	rep.behindPace = time.Duration(behind.Load())
	rep.createTime = time.Since(start)
	for _, r := range recs {
		if r.status == http.StatusOK {
			rep.created++
		}
	}
	fmt.Fprintf(log, "created %d of %d timers in %v\n", rep.created, o.timers, rep.createTime.Round(time.Millisecond))
	rep.rssBefore, rep.rssAfter = rssBefore, sumRSS(pids)
	if !o.hold {
		rep.createOutbound = scrapeOutbound(targets)
	}
	rep.records = rep.created * min(o.rf, len(targets))
	if o.hold {
		rep.cpu = sumCPU(pids) - cpuBefore
		if o.join > 0 {
			if rep.join, err = join(o, c, prof, log); err != nil {
				return nil, err
			}
		}
		return rep, nil
	}
	if o.crash != "" {
		if err := crash(o, c, log); err != nil {
			return nil, err
		}
	}

	waitPops(o, recs, sk, start.Add(lead), rep.created*o.pops, min(o.rf, len(targets)), log)
	rep.cpu = sumCPU(pids) - cpuBefore
	rep.measurePops(recs, sk)
	rep.outbound = scrapeOutbound(targets)
	rep.rssPopped = sumRSS(pids)
	if o.linger > 0 && len(pids) > 0 {
		fmt.Fprintf(log, "lingering %v ...\n", o.linger)
		time.Sleep(o.linger)
		rep.rssLinger = sumRSS(pids)
	}

	// The pop baseline, in the same run: the same number of callbacks
	// from a plain client.
	if slow, need := sk.slow(o.timers); slow && need > barePopLimit {
		rep.barePopSkipped = need
	} else {
		rep.barePopTime = barePops(o, sk.url)
	}
	return rep, nil
}

// crash kills one node (the first) or all of them with SIGKILL
// o.crashAfter after the creates were answered, and starts them again on
// the same files o.restartAfter later, all at once.
func crash(o options, c *cluster, log io.Writer) error {
	n := 1
	if o.crash == "all" {
		n = len(c.Addrs())
	}
	time.Sleep(o.crashAfter)
	for i := range n {
		c.kill(i)
	}
	fmt.Fprintf(log, "killed %d node(s) with SIGKILL\n", n)
	time.Sleep(o.restartAfter)
	start := time.Now()
	errs := make([]error, n)
	parallel(n, n, func(i int) { errs[i] = c.restart(i) })
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("restart: %w (logs in %s)", err, c.Dir())
	}
	fmt.Fprintf(log, "restarted %d node(s), serving again after %v\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}

// barePopLimit is the longest the plain-client baseline may take at a
// slow sink's full rate; beyond it the baseline is skipped, and said so.
const barePopLimit = 30 * time.Second

// waitPops waits until want (timer, seq) pops have arrived, or until the
// last pop's due time plus every backup rank's 2 s skew, the time a slow
// sink needs to serve them all, and a margin have passed.
func waitPops(o options, recs []timerRec, sk *sink, last time.Time, want, ranks int, log io.Writer) {
	for _, r := range recs {
		last = maxTime(last, r.answered.Add(time.Duration(o.pops)*r.interval))
	}
	_, drain := sk.slow(want)
	deadline := last.Add(time.Duration(ranks)*2*time.Second + drain + 5*time.Second)
	for time.Now().Before(deadline) {
		n := sk.popped()
		fmt.Fprintf(log, "popped %d of %d\n", n, want)
		if n >= want {
			return
		}
		time.Sleep(time.Until(minTime(time.Now().Add(time.Second), deadline)))
	}
}

// holdSecs is the interval of -hold's timers: none pops during a run.
const holdSecs = 3600

// holdSpec is -hold's timer i: a callback URI of its own under the sink's
// (as a client with one endpoint per job would have) and a 20-byte opaque,
// about 50 bytes in all.
func holdSpec(sinkURL string, i, rf int) wire.Timer {
	return wire.Timer{Interval: holdSecs * time.Second, RepeatFor: holdSecs * time.Second,
		URI: sinkURL + "/" + strconv.Itoa(i), Opaque: fmt.Sprintf("hold-%015d", i), ReplicationFactor: rf}
}

// measurePops reads the sink's records of every (timer, seq) pop
// against that pop's own bounds.
func (r *report) measurePops(recs []timerRec, sk *sink) {
	var first, last, dueFirst, dueLast time.Time
	for i, rec := range recs {
		if rec.status != http.StatusOK {
			continue
		}
		if due := rec.sent.Add(rec.interval); dueFirst.IsZero() || due.Before(dueFirst) {
			dueFirst = due
		}
		dueLast = maxTime(dueLast, rec.answered.Add(time.Duration(sk.pops)*rec.interval))
		for k := 1; k <= sk.pops; k++ {
			at, ok := r.measurePop(rec, k, sk, i*sk.pops+k-1)
			if !ok {
				continue
			}
			if first.IsZero() || at.Before(first) {
				first = at
			}
			last = maxTime(last, at)
		}
	}
	slices.Sort(r.lateness)
	r.popSpan, r.dueSpan = last.Sub(first), dueLast.Sub(dueFirst)
	r.stray, r.dropped = int(sk.stray.Load()), int(sk.dropped.Load())
}

// measurePop counts pop k of rec, the sink's pair j, and returns when it
// first arrived (ok false when it never did).
func (r *report) measurePop(rec timerRec, k int, sk *sink, j int) (time.Time, bool) {
	n := sk.count[j].Load()
	if n == 0 {
		r.lost++
		return time.Time{}, false
	}
	if n > 1 {
		r.duplicated++
		r.extraPops += int(n - 1)
	}
	at := time.Unix(0, sk.first[j].Load())
	due := time.Duration(k) * rec.interval
	if at.Before(rec.sent.Add(due)) {
		r.early++
	}
	r.lateness = append(r.lateness, max(at.Sub(rec.answered.Add(due)), 0))
	return at, true
}

func newClient(concurrency int) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns: concurrency, MaxIdleConnsPerHost: concurrency,
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		},
	}
}

// post sends body and returns the status (0 when no answer came).
func post(client *http.Client, url string, body []byte) int {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// bareCreates times the same creates into the bare server (bare.go) in a
// process of its own and in this one.
func bareCreates(o options, cbURL string) (own, here time.Duration, err error) {
	if own, err = bareCreatesOwn(o, cbURL); err != nil {
		return 0, 0, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	srv := &http.Server{Handler: bareHandler()}
	go func() { _ = srv.Serve(l) }()
	defer srv.Shutdown(context.Background())
	return own, timeCreates(o, cbURL, l.Addr().String()), nil
}

// bareCreatesOwn times the same creates into the bare server in a
// process of its own.
func bareCreatesOwn(o options, cbURL string) (time.Duration, error) {
	p, err := startBareProcess()
	if err != nil {
		return 0, err
	}
	defer p.stop()
	return timeCreates(o, cbURL, p.addr), nil
}

// timeCreates times o.timers creates like the tool's into addr, with the
// client and concurrency the nodes' creates have.
func timeCreates(o options, cbURL, addr string) time.Duration {
	client := newClient(o.concurrency)
	defer client.CloseIdleConnections()
	url := "http://" + addr + "/timers"
	start := time.Now()
	parallel(o.timers, o.concurrency, func(i int) {
		post(client, url, wire.Encode(wire.Timer{Interval: 5 * time.Second, RepeatFor: 5 * time.Second, URI: cbURL, Opaque: "b" + strconv.Itoa(i), ReplicationFactor: o.rf}))
	})
	return time.Since(start)
}

// barePops times as many callbacks as timers, sent by a plain client to
// the same sink.
func barePops(o options, cbURL string) time.Duration {
	client := newClient(o.concurrency)
	start := time.Now()
	parallel(o.timers, o.concurrency, func(i int) {
		post(client, cbURL, []byte("b"+strconv.Itoa(i)))
	})
	return time.Since(start)
}

func sumRSS(pids []int) int64 {
	var sum int64
	for _, p := range pids {
		if n, err := rss(p); err == nil {
			sum += n
		}
	}
	return sum
}

// sumCPU is the processes' user and system time so far.
func sumCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, p := range pids {
		if d, err := cpuTime(p); err == nil {
			sum += d
		}
	}
	return sum
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// storeMax raises m to v if v is larger.
func storeMax(m *atomic.Int64, v int64) {
	for old := m.Load(); v > old && !m.CompareAndSwap(old, v); old = m.Load() {
	}
}
