package sim

import (
	"fmt"
	"runtime"
	"sync"
)

// SeedOutcome is what one seed of a sweep gave: its plan, the result of
// its first run, and the run hash and event count of its second run,
// which must equal the first's (the determinism check).
type SeedOutcome struct {
	Seed   uint64
	Plan   *Plan
	Result *Result
	// ReplayHash (a RunHash) and ReplayEvents are the second run's.
	ReplayHash   uint64
	ReplayEvents uint64
}

// Deterministic reports whether the seed's two runs left the same trace,
// up to the checker's verdict, which only the first run asks for.
func (o SeedOutcome) Deterministic() bool {
	return o.Result.RunHash == o.ReplayHash && o.Result.Events == o.ReplayEvents
}

// FailureKind is the first failed guarantee or expectation of the first
// run ("" when it passed): what a pinned seed in KnownFailingFile names.
func (o SeedOutcome) FailureKind() string { return failureKind(o.Result) }

// Pinned reports whether the seed failed exactly as known pins it.
func (o SeedOutcome) Pinned(known map[uint64]KnownBug) bool {
	kind := o.FailureKind()
	return kind != "" && kind == known[o.Seed].Kind
}

// Line is the one-line account of a failed seed a sweep prints: the
// summary, the fault mix and the first problem.
func (o SeedOutcome) Line() string {
	if !o.Deterministic() {
		return fmt.Sprintf("seed=%d NONDETERMINISTIC run hash %016x vs %016x", o.Seed, o.Result.RunHash, o.ReplayHash)
	}
	return Summary(o.Result) + " mix=" + mixString(o.Plan) + " first=" + firstProblem(o.Result)
}

// Sweep generates and runs every seed twice, spread over all cores (each
// run is a single-threaded world of its own; parallelism is only across
// runs), and calls done with each seed's outcome as it finishes, one call
// at a time. It is the one seed runner of the command and the tests. The
// second run only replays the simulation: judging the same history again
// would cost a third of the sweep and tell the determinism check nothing
// about the run (the checker's own is TestCheckIsDeterministic's).
func Sweep(seeds []uint64, done func(SeedOutcome)) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan uint64)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for seed := range work {
				p := Generate(seed)
				a, b := Run(p, Options{}), Run(p, Options{SkipCheck: true})
				mu.Lock()
				done(SeedOutcome{Seed: seed, Plan: p, Result: a, ReplayHash: b.RunHash, ReplayEvents: b.Events})
				mu.Unlock()
			}
		})
	}
	for _, s := range seeds {
		work <- s
	}
	close(work)
	wg.Wait()
}

// GCPercent is the collector's target the simulator's command and tests
// set (runtime/debug.SetGCPercent), unless GOGC says otherwise. A run
// allocates many times what it holds (every message a node sends is
// built, encoded, parsed and dropped), and at Go's default of 100 the
// collector took about a sixth of a sweep's CPU: at 400, seeds 1..100
// used 17% less CPU and the process held 110 MB where 47 MB (a long
// seed about four times what it holds at 100). What a run does is the
// same at any setting: nothing in it sees the collector.
const GCPercent = 400

// Seeds lists the n seeds from from on.
func Seeds(from uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = from + uint64(i)
	}
	return out
}

// firstProblem names a failed run's first problem in a few words.
func firstProblem(r *Result) string {
	switch {
	case r.Panic != "":
		return "panic"
	case len(r.Unmet) > 0:
		return r.Unmet[0]
	case len(r.Violations) > 0:
		v := firstViolation(r.Violations)
		return fmt.Sprintf("%s@%v:%s", v.Guarantee, v.At, v.Message)
	}
	return ""
}
