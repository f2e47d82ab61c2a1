// Package checker verifies the guarantees G1-G7 of docs/design.md section 3
// against a recorded history. It knows only the history types of
// history.go, never node internals: it places timers with its own
// reference rendezvous hashing (placement.go), and placement checks take
// the nodes' placement as data.
//
// Where each guarantee is checked:
//
//	G1 never early            pops.go       checkDelivery (each node's true clock offset)
//	G2 every due pop arrives  missing.go    checkMissing, missing, lossFrom; copies.go (allLost)
//	G3 late by a bounded rank pops.go       checkDelivery; bounds.go (lateBound, heldFor)
//	G4 at most once, healthy  duplicates.go checkDuplicates, checkRetries; pops.go (orphan pops, seq)
//	G5 writes stick           sticky.go     checkSticky, unrepaired; linear.go (porcupine model)
//	G6 placement converges    check.go      CheckPlacement
//	G7 liveness after faults  missing.go    missing; pops.go and bounds.go (liveBound)
//	CHECK                     linear.go     a timer whose porcupine search ran out of steps
//
// TAGS (per-tag statistics) is checked by the simulator against the nodes'
// records, STORM (no message sent again and again once faults healed) on
// the messages it carried (sim/storm.go). What touches a timer is decided in attribution.go over the
// fault timeline of faults.go. Every check returns a verdict per due pop
// and guarantee (or per write): strict, excused by a named Excuse, or
// violated (verdict.go); coverage.go tallies them into the judged
// coverage. index.go builds the per-definition index every check reads.
package checker
