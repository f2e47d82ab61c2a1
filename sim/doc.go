// Package sim is the deterministic simulator: it runs real node.Node
// values, many at once, on one virtual clock and one simulated network
// (netsim), through the faults a plan schedules, and hands the recorded
// history to the checker.
//
// A run is a pure function of its Plan: one goroutine, one event queue
// (netsim.Loop) ordered by virtual time and then by insertion, every random
// choice drawn from a PCG stream split from the plan's seed, no real time,
// no map iteration order. The trace hash of a run (trace.go) is its
// determinism proof: two runs of one plan must give the same hash, and a
// failing seed replays exactly.
//
// The files, in the order a run meets them:
//
//   - plan.go, gen.go: a Plan, and Generate, which draws one from a seed
//     (cluster, workload, fault schedule, and the mixes: load, sites, a
//     shared instance number).
//   - scenario.go, format.go, roles.go: scenario files, the text form of
//     a Plan, parsed and written, and role names ("t1.B", a timer's first
//     backup).
//   - run.go, clock.go: Run on a netsim.Loop, and the nodes'
//     virtual clocks; steps.go, a step as it fires (roles resolved, step
//     expectations checked).
//   - client.go, callback.go, faults.go: the simulated clients, callback
//     endpoints and fault injection.
//   - check.go, report.go: the checker's verdict, the failure report and
//     the HTML report.
//   - sweep.go, known.go: Sweep, the one seed runner of the command and
//     the tests, and the seeds pinned as known failures.
//   - shrink.go: Shrink, which reduces a failing plan.
//
// The command is cmd/chronos-sim; docs/simulator.md is the guide.
package sim
