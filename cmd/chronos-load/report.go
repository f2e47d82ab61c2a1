package main

import (
	"fmt"
	"io"
	"time"
)

// report is what one run measured.
type report struct {
	opts                       options
	nodes                      int
	created                    int
	createTime, bareCreateTime time.Duration
	// behindPace is the most any create was sent after its slot in the
	// window (run.go); creates that never fell behind measure the pace,
	// not the nodes' create rate.
	behindPace time.Duration
	// bareHereTime is the bare server's inside this tool's process
	// (bare.go); bareCreateTime is in a process of its own.
	bareHereTime         time.Duration
	popSpan, barePopTime time.Duration
	// dueSpan is from the earliest to the latest due time: the window when
	// the creates kept pace, else the time they took. No pop rate can
	// exceed the timers over this span.
	dueSpan                 time.Duration
	lateness                []time.Duration // of each (timer, seq) pop that arrived, sorted
	lost, early, duplicated int             // (timer, seq) pops
	extraPops               int
	// stray counts pops with no or an out-of-range X-Sequence-Number, and
	// dropped the callbacks a slow sink's caller gave up on before it
	// answered (not counted as arrived).
	stray, dropped int
	// barePopSkipped is how long the plain-client baseline would have
	// taken at a slow sink's rate when it was skipped for that (else 0).
	barePopSkipped time.Duration
	// rssBefore and rssAfter are the nodes' summed RSS before and after
	// the creates (0 when the tool did not start them); records is how
	// many timer records the creates placed on them.
	rssBefore, rssAfter int64
	records             int
	// outbound sums the nodes' outbound requests by "kind outcome"
	// ("callback shed"), read from their metrics after the pops.
	outbound map[string]float64
	// createOutbound is the same, read once the creates are answered.
	createOutbound map[string]float64
	// rssPopped is the nodes' summed RSS once the pops are counted, and
	// rssLinger the same after -linger (0 when not measured).
	rssPopped, rssLinger int64
	// join is what -join measured (nil without it).
	join *joinResult
	// cpu is the started nodes' user and system time from the creates'
	// start until the pops are counted (-hold: the creates are
	// answered); load is the load average at the run's start and end.
	cpu  time.Duration
	load [2]string
}

// keptPace reports whether the creates kept to their slots in the window
// (within a twentieth of it): their rate is then the window's pace.
func (r *report) keptPace() bool { return r.behindPace < r.opts.window/20 }

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func (r *report) percentile(p float64) time.Duration {
	if len(r.lateness) == 0 {
		return 0
	}
	return r.lateness[min(int(p*float64(len(r.lateness))), len(r.lateness)-1)]
}

func (r *report) write(w io.Writer) {
	o := r.opts
	if o.hold {
		fmt.Fprintf(w, "chronos-load: %d node(s), rf %d, %d timers held (due in %d s)\n", r.nodes, o.rf, o.timers, holdSecs)
		if create, bare := rate(r.created, r.createTime), rate(o.timers, r.bareCreateTime); o.bare {
			fmt.Fprintf(w, "creates:   %d of %d accepted, %.0f/s; bare net/http server %.0f/s; ratio %.2f (bare server in its own process)\n",
				r.created, o.timers, create, bare, ratio(create, bare))
		} else {
			fmt.Fprintf(w, "creates:   %d of %d accepted, %.0f/s\n", r.created, o.timers, create)
		}
		r.writeMemory(w)
		r.writeCPU(w, "created")
		if r.join != nil {
			r.writeJoin(w)
		}
		return
	}
	fmt.Fprintf(w, "chronos-load: %d node(s), rf %d, %d timers due within %v, %d pop(s) each", r.nodes, o.rf, o.timers, o.window, o.pops)
	if o.sinkWorkers > 0 {
		fmt.Fprintf(w, "; sink %d workers × %v (%.0f/s)", o.sinkWorkers, o.sinkService, float64(o.sinkWorkers)/o.sinkService.Seconds())
	}
	fmt.Fprintln(w)
	create, bareCreate, bareHere := rate(r.created, r.createTime), rate(o.timers, r.bareCreateTime), rate(o.timers, r.bareHereTime)
	if r.keptPace() {
		fmt.Fprintf(w, "creates:   %d of %d accepted at the window's pace, %.0f/s (at most %v behind it): not the create rate, which needs a -window shorter than the creates take; bare net/http server %.0f/s\n",
			r.created, o.timers, create, r.behindPace.Round(time.Millisecond), bareCreate)
	} else {
		fmt.Fprintf(w, "creates:   %d of %d accepted, %.0f/s; bare net/http server %.0f/s; ratio %.2f (bare server in its own process; in this tool's, %.0f/s, ratio %.2f)\n",
			r.created, o.timers, create, bareCreate, ratio(create, bareCreate), bareHere, ratio(create, bareHere))
	}
	popped := len(r.lateness)
	pops, barePops := rate(popped, r.popSpan), rate(o.timers, r.barePopTime)
	fmt.Fprintf(w, "pops:      %d of %d popped over %v (due over %v), %.0f/s; ",
		popped, r.created*o.pops, r.popSpan.Round(time.Millisecond), r.dueSpan.Round(time.Millisecond), pops)
	if r.barePopSkipped > 0 {
		fmt.Fprintf(w, "plain client skipped (the slow sink would take %v)\n", r.barePopSkipped.Round(time.Second))
	} else {
		fmt.Fprintf(w, "plain client %.0f/s; ratio %.2f\n", barePops, ratio(pops, barePops))
	}
	fmt.Fprintf(w, "lateness:  p50 %v, p99 %v, max %v (pop k from the create's answer + k × interval)\n",
		r.percentile(0.50).Round(time.Microsecond), r.percentile(0.99).Round(time.Microsecond), r.percentile(1).Round(time.Microsecond))
	fmt.Fprintf(w, "wrong:     %d early, %d lost, %d duplicated (%d extra pops) of (timer, seq) pops; %d stray sequence numbers; %d given up by the node before the sink answered\n",
		r.early, r.lost, r.duplicated, r.extraPops, r.stray, r.dropped)
	if len(r.outbound) > 0 {
		ob := r.outbound
		fmt.Fprintf(w, "outbound:  callbacks %.0f ok, %.0f failed, %.0f shed; peers %.0f ok, %.0f failed, %.0f shed%s (the nodes' metrics)\n",
			ob["callback ok"], ob["callback failed"], ob["callback shed"], ob["peer ok"], ob["peer failed"], ob["peer shed"], batched(ob))
	}
	if ob := r.createOutbound; len(ob) > 0 {
		fmt.Fprintf(w, "peers:     %.0f requests between nodes during the creates%s\n",
			ob["peer ok"]+ob["peer failed"]+ob["peer shed"], batched(ob))
	}
	r.writeMemory(w)
	r.writeCPU(w, "created and popped")
	if r.rssPopped > 0 {
		fmt.Fprintf(w, "after:     RSS %d MB once popped", r.rssPopped>>20)
		if r.rssLinger > 0 {
			fmt.Fprintf(w, ", %d MB %v later", r.rssLinger>>20, o.linger)
		}
		fmt.Fprintln(w)
	}
}

// writeCPU reports the nodes' CPU per 1,000 timers and the load average
// beside it.
func (r *report) writeCPU(w io.Writer, what string) {
	if r.cpu > 0 && r.created > 0 {
		fmt.Fprintf(w, "cpu:       %.0f ms of the nodes' CPU per 1,000 timers %s (%v in all, user and system, /proc)\n",
			float64(r.cpu.Microseconds())/float64(r.created), what, r.cpu.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "load:      %s at the start, %s at the end (/proc/loadavg)\n", r.load[0], r.load[1])
}

func (r *report) writeMemory(w io.Writer) {
	if r.rssBefore > 0 && r.records > 0 {
		fmt.Fprintf(w, "memory:    %.0f B RSS per held timer record (%d records; RSS %d MB before the creates, %d MB after)\n",
			float64(r.rssAfter-r.rssBefore)/float64(r.records), r.records, r.rssBefore>>20, r.rssAfter>>20)
	} else {
		fmt.Fprintf(w, "memory:    not measured (nodes not started by this tool)\n")
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// batched says how many of the requests between nodes went in batches.
func batched(ob map[string]float64) string {
	if ob["peer batches"] == 0 {
		return ""
	}
	return fmt.Sprintf(", %.0f of them in %.0f batches (%.1f a batch)",
		ob["peer batched"], ob["peer batches"], ob["peer batched"]/ob["peer batches"])
}
