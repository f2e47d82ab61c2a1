package sim

import "testing"

// TestClockStepsEndBeforeTheLivenessPhase proves no generated plan steps
// a clock, or sets its drift, once the liveness phase set every clock
// right (scenarios/README.md C54): fresh seed 5042106 stepped a clock
// minutes ahead 24 s before the phase and back 5 s into it, which left
// that node minutes behind its peers for the three hours of the run,
// every message between them refused.
func TestClockStepsEndBeforeTheLivenessPhase(t *testing.T) {
	for seed := uint64(1); seed <= 5000; seed++ {
		p := Generate(seed)
		for _, s := range p.Steps {
			if (s.Op == OpJump || s.Op == OpDrift) && s.At >= p.LivenessFrom-clockSyncLead {
				t.Fatalf("seed %d: %s of %v at %v, the liveness phase from %v", seed, s.Op, s.Side, s.At, p.LivenessFrom)
			}
		}
	}
}
