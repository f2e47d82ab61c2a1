// Command peer measures the peer a user would pick for one-shot timers
// with HTTP callbacks, asynq on redis-server, the way chronos-load
// measures Chronos, so that issue 29's table can hold both from one
// sitting. It is a Go module of its own (tools/peer) so that asynq and
// go-redis never enter the service's build, and it imports nothing of the
// service's either: the baseline builds and measures without the code it
// is compared with, so its few helpers (the parallel clients, the bare
// server, the child process) repeat chronos-load's.
//
// It starts redis-server (found on PATH; it installs nothing) on a
// loopback port of its own, in a temporary folder, with an append-only
// file (appendfsync everysec, the default), and an asynq server (the
// worker) as a process of its own, as a Chronos node is, whose handler
// POSTs each task's opaque to its callback URI: the tool's sink on
// 127.0.0.1, which records when each arrived. The creates are asynq
// Enqueue calls with ProcessAt, from -concurrency clients (32), paced
// across -window as chronos-load paces its creates. It reports, each
// beside its baseline from the same run:
//
//   - creates/s, beside a bare net/http server in a process of its own
//     taking as many POSTs from as many clients (chronos-load's baseline);
//   - pops/s, beside a plain Go client POSTing as many callbacks to the
//     same sink;
//   - lateness p50, p99 and max from each task's due time, and early,
//     lost and duplicated pops: the tool waits for the pops while they
//     keep arriving (a late pop is late, not lost), until 10 s pass after
//     the last due time with none new, at most 5 minutes past it;
//   - the RSS per timer of redis-server and the worker together, read
//     once the creates are answered;
//   - the CPU (user + system, from /proc) of redis-server and the worker
//     per 1,000 timers created and popped;
//   - the load average at the start and the end of the run.
//
// asynq schedules to whole seconds (a scheduled task's score is its Unix
// second), so a task due within a second may run up to a second early:
// each task's ProcessAt is its pace slot + -lead rounded up to a whole
// second, so that none is early and its lateness is from that second.
// The worker forwards due tasks every -delayed-check (asynq's default is
// 5 s; 100ms here, tuned) and looks for pending ones every -task-check
// (default 1 s; 100ms here) when idle, and runs -workers handlers.
//
//	go run . -timers 30000 -window 1s
//	go run . -hold -timers 1000000
//
// With -hold the timers are due an hour ahead, each with a callback URI
// of its own and a 20-byte opaque (chronos-load -hold's record), the
// worker is not started, and it reports the create rate and the RSS per
// held timer only. Every address it reaches is on loopback. Exit codes:
// 0 the run completed, 1 it could not run, 2 bad flags, 3 redis-server
// is not on PATH (it says so and measures nothing).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"
)

type options struct {
	timers, concurrency, workers int
	window, lead                 time.Duration
	delayedCheck, taskCheck      time.Duration
	hold                         bool
	fsync                        string
	redis                        string
}

func main() {
	serveRoleIfAsked()
	var o options
	flag.IntVar(&o.timers, "timers", 30000, "timers to create")
	flag.IntVar(&o.concurrency, "concurrency", 32, "concurrent clients of the creates and of the baselines")
	flag.IntVar(&o.workers, "workers", 64, "the asynq server's Concurrency: handlers running at once")
	flag.DurationVar(&o.window, "window", time.Second, "the creates are paced across this window, so the timers fall due across it (or across the time the creates take, when longer)")
	flag.DurationVar(&o.lead, "lead", 0, "each timer falls due this long after its create is sent, rounded up to a whole second (default: 3s + 1s per 5000 timers + the window's whole seconds)")
	flag.DurationVar(&o.delayedCheck, "delayed-check", 100*time.Millisecond, "asynq's DelayedTaskCheckInterval (its default is 5s)")
	flag.DurationVar(&o.taskCheck, "task-check", 100*time.Millisecond, "asynq's TaskCheckInterval (its default is 1s)")
	flag.BoolVar(&o.hold, "hold", false, "measure memory only: timers due an hour ahead, created unpaced, no worker, RSS per held timer")
	flag.StringVar(&o.fsync, "appendfsync", "everysec", "redis-server's appendfsync: always, everysec or no")
	flag.StringVar(&o.redis, "redis-server", "redis-server", "the redis-server binary (looked up on PATH)")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(2)
	}
	if _, err := exec.LookPath(o.redis); err != nil {
		fmt.Fprintf(os.Stderr, "peer: SKIP: %s not found on PATH; it needs redis-server (Debian: apt-get install redis-server)\n", o.redis)
		os.Exit(3)
	}
	rep, err := run(o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
	rep.write(os.Stdout)
}

func (o *options) check() error {
	switch {
	case o.timers < 1 || o.timers > 10_000_000:
		return fmt.Errorf("-timers %d: want 1 to 10000000", o.timers)
	case o.concurrency < 1 || o.concurrency > 4096:
		return fmt.Errorf("-concurrency %d: want 1 to 4096", o.concurrency)
	case o.workers < 1 || o.workers > 4096:
		return fmt.Errorf("-workers %d: want 1 to 4096", o.workers)
	case o.window <= 0:
		return fmt.Errorf("-window %v: want more than 0", o.window)
	case o.lead < 0:
		return fmt.Errorf("-lead %v: want 0 or more", o.lead)
	case o.delayedCheck <= 0 || o.taskCheck <= 0:
		return fmt.Errorf("-delayed-check and -task-check: want more than 0")
	case o.fsync != "always" && o.fsync != "everysec" && o.fsync != "no":
		return fmt.Errorf("-appendfsync %q: want always, everysec or no", o.fsync)
	}
	return nil
}
