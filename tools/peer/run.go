package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

// sink is the callback endpoint on 127.0.0.1: per timer (opaque
// "l<index>") how many times it arrived and when it first did. Baseline
// callbacks ("b<index>") are only answered.
type sink struct {
	srv   *http.Server
	url   string
	count []atomic.Int32
	first []atomic.Int64 // UnixNano
	total atomic.Int64
}

func startSink(timers int) (*sink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{url: "http://" + l.Addr().String() + "/cb", count: make([]atomic.Int32, timers), first: make([]atomic.Int64, timers)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64))
	now := time.Now().UnixNano()
	w.WriteHeader(http.StatusOK)
	if len(body) < 2 || body[0] != 'l' {
		return
	}
	i, err := strconv.Atoi(string(body[1:]))
	if err != nil || i < 0 || i >= len(s.count) {
		return
	}
	if s.count[i].Add(1) == 1 {
		s.total.Add(1)
	}
	s.first[i].CompareAndSwap(0, now)
}

func (s *sink) close() { _ = s.srv.Shutdown(context.Background()) }

// report is what one run measured.
type report struct {
	opts                       options
	loadStart, loadEnd         string
	created                    int
	createTime, bareCreateTime time.Duration
	behindPace                 time.Duration
	popSpan, dueSpan           time.Duration
	barePopTime                time.Duration
	lateness                   []time.Duration
	lost, early, duplicated    int
	rssBefore, rssAfter        int64
	cpu                        time.Duration // redis-server's and the worker's, creates and pops
}

// holdSecs is the lead of -hold's timers: none falls due during a run.
const holdSecs = 3600

func run(o options, log io.Writer) (*report, error) {
	rep := &report{opts: o, loadStart: loadavg()}
	sk, err := startSink(o.timers)
	if err != nil {
		return nil, err
	}
	defer sk.close()
	rs, err := startRedis(o.redis, o.fsync)
	if err != nil {
		return nil, err
	}
	defer rs.stop()
	pids := []int{rs.pid()}
	if !o.hold {
		w, err := startChild("worker", redisEnv+"="+rs.addr, workersEnv+"="+strconv.Itoa(o.workers),
			delayedCheckEnv+"="+o.delayedCheck.String(), taskCheckEnv+"="+o.taskCheck.String())
		if err != nil {
			return nil, err
		}
		defer w.stop()
		pids = append(pids, w.pid())
		// The create baseline, in the same run, while the peer is idle.
		if rep.bareCreateTime, err = bareCreates(o, sk.url); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(log, "redis-server %s (appendonly yes, appendfsync %s), pid(s) %v\n", rs.addr, o.fsync, pids)

	client := asynq.NewClient(asynq.RedisClientOpt{Addr: rs.addr, PoolSize: o.concurrency})
	defer client.Close()
	lead := o.lead
	if lead == 0 {
		lead = time.Duration(o.timers/5000+3)*time.Second + o.window.Truncate(time.Second)
	}
	dues := make([]time.Time, o.timers)
	ok := make([]bool, o.timers)
	rep.rssBefore, rep.cpu = sumRSS(pids), sumCPU(pids)
	var behind atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	parallel(o.timers, o.concurrency, func(i int) {
		var payload string
		var due time.Time
		if o.hold {
			payload = sk.url + "/" + strconv.Itoa(i) + "\n" + fmt.Sprintf("hold-%015d", i)
			due = time.Now().Add(holdSecs * time.Second)
		} else {
			slot := start.Add(time.Duration(int64(o.window) * int64(i) / int64(o.timers)))
			time.Sleep(time.Until(slot))
			storeMax(&behind, int64(time.Since(slot)))
			payload = sk.url + "\nl" + strconv.Itoa(i)
			// asynq schedules to whole seconds: round up, so none is early.
			due = time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
		}
		_, err := client.Enqueue(asynq.NewTask(taskType, []byte(payload)), asynq.ProcessAt(due))
		if err != nil {
			firstErr.CompareAndSwap(nil, err)
			return
		}
		dues[i], ok[i] = due, true
	})
	rep.createTime = time.Since(start)
	rep.behindPace = time.Duration(behind.Load())
	for _, k := range ok {
		if k {
			rep.created++
		}
	}
	rep.rssAfter = sumRSS(pids)
	fmt.Fprintf(log, "created %d of %d timers in %v\n", rep.created, o.timers, rep.createTime.Round(time.Millisecond))
	if err, _ := firstErr.Load().(error); err != nil {
		fmt.Fprintln(log, "first create error:", err)
	}
	if o.hold {
		rep.cpu = sumCPU(pids) - rep.cpu
		rep.loadEnd = loadavg()
		return rep, nil
	}
	var last time.Time
	for i, d := range dues {
		if ok[i] && d.After(last) {
			last = d
		}
	}
	waitPops(sk, rep.created, last, log)
	rep.cpu = sumCPU(pids) - rep.cpu
	rep.measurePops(dues, ok, sk)
	rep.barePopTime = barePops(o, sk.url)
	rep.loadEnd = loadavg()
	return rep, nil
}

// Bounds of the wait for the pops: a pop still to come is waited for
// while pops keep arriving (the peer may pop more slowly than its timers
// fall due, and a late pop is late, not lost), up to popCeiling past the
// last due time; it stops popIdle after the last due time with no new
// pop.
const (
	popIdle    = 10 * time.Second
	popCeiling = 5 * time.Minute
)

// waitPops waits until want timers have popped, or until popIdle passed
// after the last due time with none arriving, or popCeiling after it.
func waitPops(sk *sink, want int, last time.Time, log io.Writer) {
	ceiling := last.Add(popCeiling)
	idleSince, seen := last, -1
	for now := time.Now(); now.Before(ceiling); now = time.Now() {
		n := int(sk.total.Load())
		fmt.Fprintf(log, "popped %d of %d\n", n, want)
		if n >= want {
			return
		}
		if n != seen {
			seen, idleSince = n, maxTime(now, last)
		} else if now.Sub(idleSince) > popIdle {
			return
		}
		time.Sleep(time.Second)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (r *report) measurePops(dues []time.Time, ok []bool, sk *sink) {
	var first, last, dueFirst, dueLast time.Time
	for i, due := range dues {
		if !ok[i] {
			continue
		}
		if dueFirst.IsZero() || due.Before(dueFirst) {
			dueFirst = due
		}
		if due.After(dueLast) {
			dueLast = due
		}
		n := sk.count[i].Load()
		if n == 0 {
			r.lost++
			continue
		}
		if n > 1 {
			r.duplicated++
		}
		at := time.Unix(0, sk.first[i].Load())
		if at.Before(due) {
			r.early++
		}
		r.lateness = append(r.lateness, max(at.Sub(due), 0))
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	slices.Sort(r.lateness)
	r.popSpan, r.dueSpan = last.Sub(first), dueLast.Sub(dueFirst)
}

func (r *report) percentile(p float64) time.Duration {
	if len(r.lateness) == 0 {
		return 0
	}
	return r.lateness[min(int(p*float64(len(r.lateness))), len(r.lateness)-1)]
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func (r *report) write(w io.Writer) {
	o := r.opts
	if o.hold {
		fmt.Fprintf(w, "peer: asynq + redis-server (appendonly, appendfsync %s), %d timers held (due in %d s), %d clients\n", o.fsync, o.timers, holdSecs, o.concurrency)
	} else {
		fmt.Fprintf(w, "peer: asynq + redis-server (appendonly, appendfsync %s), %d timers due within %v, %d clients, %d workers, delayed-check %v, task-check %v\n",
			o.fsync, o.timers, o.window, o.concurrency, o.workers, o.delayedCheck, o.taskCheck)
	}
	fmt.Fprintf(w, "load:      %s at the start, %s at the end (/proc/loadavg)\n", r.loadStart, r.loadEnd)
	create := rate(r.created, r.createTime)
	switch {
	case o.hold:
		fmt.Fprintf(w, "creates:   %d of %d accepted, %.0f/s\n", r.created, o.timers, create)
	case r.behindPace < o.window/20:
		fmt.Fprintf(w, "creates:   %d of %d accepted at the window's pace, %.0f/s (not the create rate); bare net/http server %.0f/s\n",
			r.created, o.timers, create, rate(o.timers, r.bareCreateTime))
	default:
		bare := rate(o.timers, r.bareCreateTime)
		fmt.Fprintf(w, "creates:   %d of %d accepted, %.0f/s; bare net/http server %.0f/s; ratio %.2f\n", r.created, o.timers, create, bare, ratio(create, bare))
	}
	if !o.hold {
		popped := len(r.lateness)
		pops, bare := rate(popped, r.popSpan), rate(o.timers, r.barePopTime)
		fmt.Fprintf(w, "pops:      %d of %d popped over %v (due over %v), %.0f/s; plain client %.0f/s; ratio %.2f\n",
			popped, r.created, r.popSpan.Round(time.Millisecond), r.dueSpan.Round(time.Millisecond), pops, bare, ratio(pops, bare))
		fmt.Fprintf(w, "lateness:  p50 %v, p99 %v, max %v (from the due second)\n",
			r.percentile(0.50).Round(time.Microsecond), r.percentile(0.99).Round(time.Microsecond), r.percentile(1).Round(time.Microsecond))
		fmt.Fprintf(w, "wrong:     %d early, %d lost, %d duplicated\n", r.early, r.lost, r.duplicated)
	}
	if r.created > 0 {
		fmt.Fprintf(w, "memory:    %.0f B RSS per timer, redis-server and the worker (RSS %d MB before the creates, %d MB after)\n",
			float64(r.rssAfter-r.rssBefore)/float64(r.created), r.rssBefore>>20, r.rssAfter>>20)
		what := "created and popped"
		if o.hold {
			what = "created"
		}
		fmt.Fprintf(w, "cpu:       %.0f ms per 1,000 timers %s (redis-server and the worker, %v in all)\n",
			float64(r.cpu.Milliseconds())*1000/float64(r.created), what, r.cpu.Round(time.Millisecond))
	}
}

// bareCreates times o.timers POSTs into the bare server in a process of
// its own, with as many clients.
func bareCreates(o options, cbURL string) (time.Duration, error) {
	p, err := startChild("bare")
	if err != nil {
		return 0, err
	}
	defer p.stop()
	client := newClient(o.concurrency)
	defer client.CloseIdleConnections()
	url := "http://" + p.line + "/timers"
	start := time.Now()
	parallel(o.timers, o.concurrency, func(i int) {
		post(client, url, []byte(`{"interval":5,"repeat_for":5,"uri":"`+cbURL+`","opaque":"b`+strconv.Itoa(i)+`"}`))
	})
	return time.Since(start), nil
}

// barePops times as many callbacks as timers, sent by a plain client to
// the same sink.
func barePops(o options, cbURL string) time.Duration {
	client := newClient(o.concurrency)
	defer client.CloseIdleConnections()
	start := time.Now()
	parallel(o.timers, o.concurrency, func(i int) { post(client, cbURL, []byte("b"+strconv.Itoa(i))) })
	return time.Since(start)
}

func newClient(concurrency int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConns: concurrency, MaxIdleConnsPerHost: concurrency,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
}

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

func sumRSS(pids []int) (n int64) {
	for _, p := range pids {
		n += rss(p)
	}
	return n
}

func sumCPU(pids []int) (d time.Duration) {
	for _, p := range pids {
		d += cpu(p)
	}
	return d
}

func storeMax(m *atomic.Int64, v int64) {
	for old := m.Load(); v > old && !m.CompareAndSwap(old, v); old = m.Load() {
	}
}
