package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/netsim"
)

// TestConcurrentCreatesGetUniqueIDs proves that thousands of creates taken
// by three nodes in the same instant, each node configured as production
// configures it (address, membership and key; its instance number
// derived, not given), all get distinct IDs, and that every timer pops,
// none early (G1, G2). Before instance numbers were derived, every node
// issued IDs as instance 0 and colliding creates took over each other's
// timers.
func TestConcurrentCreatesGetUniqueIDs(t *testing.T) {
	const creates = 3000
	p := &Plan{Name: "create-burst", Seed: 1, Nodes: 3, Callbacks: 1, Clients: MaxClients,
		Net: netsim.DefaultOptions(), End: time.Minute}
	for i := range creates {
		p.Steps = append(p.Steps, Step{At: time.Second, Op: OpCreate, Timer: fmt.Sprintf("t%d", i),
			Client: 1 + i%MaxClients, Via: 1 + i%3, Interval: time.Duration(1+i%3) * time.Second, RF: 2, Callback: 1})
	}
	res := Run(p, Options{})
	if res.Failed() {
		t.Fatalf("run failed: panic %q, violations %v", res.Panic, res.Violations)
	}
	ids := map[uint64]string{}
	popped := map[string]bool{}
	for _, pop := range res.History.Pops {
		popped[pop.Opaque] = true
	}
	ok := 0
	for _, op := range res.History.Ops {
		if op.Kind != checker.Create || op.Outcome != checker.OK {
			continue
		}
		ok++
		if other, dup := ids[op.Timer]; dup {
			t.Errorf("ID %016x issued to %s and %s", op.Timer, other, op.Spec.Opaque)
		}
		ids[op.Timer] = op.Spec.Opaque
		if !popped[op.Spec.Opaque] {
			t.Errorf("timer %s (%016x) never popped", op.Spec.Opaque, op.Timer)
		}
	}
	if res.IDCollisions != 0 || res.Forbidden != 0 {
		t.Errorf("ID collisions %d, forbidden internal requests %d: want 0 and 0", res.IDCollisions, res.Forbidden)
	}
	if ok != creates {
		t.Errorf("creates answered 2xx: got %d, want %d", ok, creates)
	}
}
