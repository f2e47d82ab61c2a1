// Command chronos-load measures a Chronos cluster under load: it starts a
// local cluster of real chronos processes on loopback (or targets given
// nodes), runs its own callback sink, creates one-shot timers paced across
// one window so that they fall due across it, and reports the create rate, pops per
// second, lateness percentiles, early, lost and duplicated pops, and the
// nodes' memory per held timer, each beside a bare baseline measured in
// the same run: a plain net/http server taking the same creates (in a
// process of its own, as each node is, and in the tool's process), and a
// plain client sending the same pops to the same sink. It also reports
// the started nodes' CPU (user and system, from /proc) per 1,000 timers
// created and popped, and the load average at the run's start and end.
//
//	chronos-load -nodes 3 -rf 2 -timers 20000 -window 1s
//	chronos-load -targets 127.0.0.1:7253 -timers 5000
//	chronos-load -hold -timers 1000000
//	chronos-load -hold -nodes 3 -rf 2 -timers 1000000 -join 1
//
// With -hold it measures memory only: the timers are due an hour ahead,
// each with its own callback URI and a 20-byte opaque (a realistic
// record, unlike the burst's short ones), and it reports the RSS per held
// record once the creates are answered; -bare adds the create baseline
// (the same creates into a bare net/http server in a process of its own,
// before the nodes take theirs), so that an unpaced run's create rate
// stands beside it. With -linger d a burst run reads
// the nodes' RSS again d after the pops, to show whether the memory the
// burst took is returned. -memory-limit sets the started nodes' soft
// memory limit ([limits] memory_limit), -gc-headroom their collector's
// headroom ([limits] gc_headroom). With -join n, n more nodes then
// join the cluster, and it reports how long until every node's resync
// has completed, beside the creates' rate in the same run, and the
// joining node's own resync time (its "resync finished" line's took)
// beside the time the creates of the same timers took, with the load
// average at the join's start and end; with -profile the profiles then
// cover the join only, the joining nodes' included.
//
// With -pops k each timer pops k times, one interval apart (repeat-for is
// k intervals), and the sink counts every (timer, X-Sequence-Number) pair:
// a pair never seen is lost, one seen twice duplicated, pop j before the
// create + j intervals early, and lateness is per pop against its own due
// time. Its pops/s then spans the k intervals: it follows the schedule,
// and its ratio to the plain client is no measure of capacity.
//
// With -sink-workers n -sink-service d the sink is a slow endpoint: it
// serves at most n callbacks at a time, each taking d before its 200
// (n/d per second; 8 × 20ms is 400/s), and the rest wait in its queue.
// The plain-client pop baseline goes to the same slow sink (it is skipped,
// and the report says so, when that would take over 30 s). The outbound
// line then shows what the nodes did with the callbacks the endpoint
// could not take in time.
//
//	chronos-load -nodes 1 -rf 1 -timers 500 -pops 3
//	chronos-load -nodes 2 -rf 2 -timers 2000 -sink-workers 8 -sink-service 20ms
//
// With -profile DIR each started node serves its profiles on a loopback
// address of its own ([debug] pprof_address), and the tool writes its CPU
// profile of the run, in 10 s segments, and its allocation profile there:
//
//	chronos-load -nodes 1 -rf 1 -timers 30000 -window 1s -profile prof
//	go tool pprof -top prof/node0-cpu-*.pprof
//
// Every address it reaches is on loopback. Exit codes: 0 the run
// completed (whatever it measured), 1 it could not run, 2 bad flags.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	serveBareIfAsked()
	var o options
	flag.IntVar(&o.nodes, "nodes", 1, "nodes of the local cluster to start (ignored with -targets)")
	flag.StringVar(&o.targets, "targets", "", "comma-separated host:port of running nodes to load instead of starting a cluster")
	flag.StringVar(&o.bin, "bin", "", "chronos binary to start (default: go build ./cmd/chronos)")
	flag.IntVar(&o.rf, "rf", 2, "replication factor of the timers")
	flag.IntVar(&o.timers, "timers", 5000, "timers to create")
	flag.DurationVar(&o.window, "window", time.Second, "the creates are paced across this window, so the timers fall due across it (or across the time the creates take, when longer)")
	flag.DurationVar(&o.lead, "lead", 0, "the timers' interval, whole seconds: each falls due this long after its create is sent (default: 3s + 1s per 5000 timers + the window's whole seconds, so that every create is answered before the first pop)")
	flag.IntVar(&o.concurrency, "concurrency", 64, "concurrent requests of the creates and of the pop baseline")
	flag.BoolVar(&o.hold, "hold", false, "measure memory only: create timers due an hour ahead, report RSS per held record, skip pops and baselines")
	flag.BoolVar(&o.bare, "bare", false, "with -hold: time the same creates into a bare net/http server in a process of its own first, the baseline of the unpaced create rate")
	flag.StringVar(&o.memoryLimit, "memory-limit", "", "the started nodes' [limits] memory_limit, e.g. 300MiB (default none)")
	flag.StringVar(&o.gcHeadroom, "gc-headroom", "", "the started nodes' [limits] gc_headroom, e.g. 10% or off (default the node's)")
	flag.DurationVar(&o.linger, "linger", 0, "after the pops, wait this long and read the nodes' RSS again (0: do not)")
	flag.IntVar(&o.pops, "pops", 1, "pops of each timer, one interval apart (1: one-shot timers)")
	flag.IntVar(&o.sinkWorkers, "sink-workers", 0, "callbacks the sink serves at a time, the rest queue (0: answer at once); needs -sink-service")
	flag.DurationVar(&o.sinkService, "sink-service", 0, "how long the sink takes over each callback before its 200 (0: at once); needs -sink-workers")
	flag.BoolVar(&o.storage, "storage", false, "the started nodes keep their timers on disk ([storage] dir in the cluster's folder); default in memory")
	flag.StringVar(&o.crash, "crash", "", "kill -9 \"one\" node (the first) or \"all\" nodes -crash-after the creates are answered, and restart them -restart-after later on the same files")
	flag.DurationVar(&o.crashAfter, "crash-after", 5*time.Second, "with -crash: how long after the creates are answered the nodes are killed")
	flag.DurationVar(&o.restartAfter, "restart-after", time.Second, "with -crash: how long after the kill the nodes start again")
	flag.StringVar(&o.profile, "profile", "", "`folder` to write each started node's CPU profile of the creates and pops (node<i>-cpu.pprof) and allocation profile (node<i>-allocs.pprof) to, for go tool pprof")
	flag.IntVar(&o.join, "join", 0, "with -hold: once the timers are created, start this many nodes more as joining members, have the others reload, and report how long until every node's resync has completed (GET /status)")
	flag.DurationVar(&o.spread, "spread", 0, "whole seconds: timer i falls due -lead + (i mod (spread+1s)) after its create, so the timers fall due across the spread (default 0: all at -lead)")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "chronos-load:", err)
		os.Exit(2)
	}
	rep, err := run(o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chronos-load:", err)
		os.Exit(1)
	}
	rep.write(os.Stdout)
}

type options struct {
	nodes, rf, timers, concurrency int
	pops, sinkWorkers              int
	sinkService                    time.Duration
	targets, bin, memoryLimit      string
	gcHeadroom                     string
	window, lead, linger           time.Duration
	hold                           bool
	// bare, with hold, measures the bare create baseline too.
	bare bool
	// storage keeps the started nodes' timers on disk; crash ("one",
	// "all") kills that many with SIGKILL crashAfter the creates were
	// answered and restarts them restartAfter later; spread gives timer
	// i a lead of lead + i mod (spread+1s), whole seconds.
	storage                  bool
	crash                    string
	crashAfter, restartAfter time.Duration
	spread                   time.Duration
	// profile, when set, is the folder the started nodes' profiles are
	// written to (profile.go).
	profile string
	// join is how many nodes join the started cluster once -hold's
	// timers are created (join.go).
	join int
}

func (o *options) check() error {
	switch {
	case o.targets == "" && (o.nodes < 1 || o.nodes > 16):
		return fmt.Errorf("-nodes %d: want 1 to 16", o.nodes)
	case o.profile != "" && o.targets != "":
		return fmt.Errorf("-profile needs the nodes the tool starts, not -targets")
	case o.rf < 1 || o.rf > 16:
		return fmt.Errorf("-rf %d: want 1 to 16", o.rf)
	case o.timers < 1 || o.timers > 10_000_000:
		return fmt.Errorf("-timers %d: want 1 to 10000000", o.timers)
	case o.window <= 0:
		return fmt.Errorf("-window %v: want more than 0", o.window)
	case o.lead < 0 || o.lead%time.Second != 0:
		return fmt.Errorf("-lead %v: want whole seconds", o.lead)
	case o.concurrency < 1 || o.concurrency > 4096:
		return fmt.Errorf("-concurrency %d: want 1 to 4096", o.concurrency)
	case o.linger < 0 || o.linger > time.Hour:
		return fmt.Errorf("-linger %v: want 0 to 1h", o.linger)
	case o.memoryLimit != "" && o.targets != "":
		return fmt.Errorf("-memory-limit with -targets: the tool configures only the nodes it starts")
	case o.gcHeadroom != "" && o.targets != "":
		return fmt.Errorf("-gc-headroom needs the nodes the tool starts, not -targets")
	case strings.ContainsAny(o.gcHeadroom, "\n[]"):
		return fmt.Errorf("-gc-headroom %q: want a percent such as 25%% or off", o.gcHeadroom)
	case strings.ContainsAny(o.memoryLimit, "\n[]"):
		return fmt.Errorf("-memory-limit %q: want a size such as 300MiB", o.memoryLimit)
	case o.hold && o.linger > 0:
		return fmt.Errorf("-linger %v with -hold: held timers do not pop", o.linger)
	case o.crash != "" && o.crash != "one" && o.crash != "all":
		return fmt.Errorf("-crash %q: want one or all", o.crash)
	case o.crash != "" && (o.targets != "" || o.hold):
		return fmt.Errorf("-crash with -targets or -hold: the tool crashes only nodes it starts, whose timers pop")
	case o.join != 0 && (!o.hold || o.targets != "" || o.join < 0 || o.nodes+o.join > 16):
		return fmt.Errorf("-join %d: want -hold, no -targets, and at most 16 nodes in all", o.join)
	case o.bare && !o.hold:
		return fmt.Errorf("-bare without -hold: a burst run always measures its baselines")
	case o.spread < 0 || o.spread%time.Second != 0:
		return fmt.Errorf("-spread %v: want whole seconds", o.spread)
	}
	if err := o.checkPops(); err != nil {
		return err
	}
	for _, t := range splitTargets(o.targets) {
		if !isLoopback(t) {
			return fmt.Errorf("-targets %q: only loopback addresses (127.0.0.0/8, [::1])", t)
		}
	}
	return nil
}

// checkPops checks the flags of repeating timers and of the slow sink.
func (o *options) checkPops() error {
	switch {
	case o.pops < 1 || int64(o.timers)*int64(o.pops) > 10_000_000:
		return fmt.Errorf("-pops %d: want 1 or more, with -timers × -pops at most 10000000 (the sink keeps a counter per pop)", o.pops)
	case o.sinkWorkers < 0 || o.sinkWorkers > 4096:
		return fmt.Errorf("-sink-workers %d: want 0 to 4096", o.sinkWorkers)
	case o.sinkService < 0 || o.sinkService > 10*time.Second:
		return fmt.Errorf("-sink-service %v: want 0 to 10s", o.sinkService)
	case (o.sinkWorkers > 0) != (o.sinkService > 0):
		return fmt.Errorf("-sink-workers %d -sink-service %v: give both (a slow sink) or neither", o.sinkWorkers, o.sinkService)
	case o.hold && (o.pops > 1 || o.sinkWorkers > 0):
		return fmt.Errorf("-pops or -sink-workers with -hold: held timers do not pop")
	}
	return nil
}

func splitTargets(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
