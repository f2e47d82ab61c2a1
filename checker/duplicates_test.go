package checker

import "testing"

func TestRefusedCallbackRetriedIsNoDuplicate(t *testing.T) {
	// A callback the endpoint refused is popped again by the next replica
	// 2s later (docs/design.md 4.7): no G4, though later pops need not come.
	h := healthy()
	h.Ops[0].Spec.RepeatFor = 2 * sec
	h.Pops = h.Pops[:2]
	h.Pops[1].Answered = 500
	h.Faults = []Fault{{At: 1500 * ms, Kind: FailCallback}, {At: 2100 * ms, Kind: CallbackOK}}
	h.LivenessFrom = 2100 * ms
	h.Pops = append(h.Pops, pop(4020*ms, "n2", "a", 2))
	requireNone(t, Check(h))
}
