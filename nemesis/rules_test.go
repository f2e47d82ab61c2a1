package nemesis

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestDecide proves each rule does to a frame what its field says, and
// nothing else.
func TestDecide(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		rule   Rule
		hold   bool
		copies int
		lo, hi time.Duration
	}{
		{"clear forwards at once", Rule{}, false, 1, 0, 0},
		{"drop loses", Rule{Drop: true}, false, 0, 0, 0},
		{"hold queues", Rule{Hold: true}, true, 0, 0, 0},
		{"loss 1 loses", Rule{Loss: 1}, false, 0, 0, 0},
		{"dup 1 doubles", Rule{Dup: 1, Delay: time.Millisecond}, false, 2, time.Millisecond, time.Millisecond},
		{"delay with jitter stays in its window", Rule{Delay: 200 * time.Millisecond, Jitter: 100 * time.Millisecond},
			false, 1, 100 * time.Millisecond, 300 * time.Millisecond},
		{"jitter never goes below zero", Rule{Jitter: time.Second}, false, 1, 0, time.Second},
		{"reorder 1 adds its delay", Rule{Delay: 10 * time.Millisecond, Reorder: 1, ReorderBy: 300 * time.Millisecond},
			false, 1, 310 * time.Millisecond, 310 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 200 {
				v := decide(c.rule, rng)
				if v.hold != c.hold || len(v.delays) != c.copies {
					t.Fatalf("got hold %v and %d copies, want hold %v and %d", v.hold, len(v.delays), c.hold, c.copies)
				}
				for _, d := range v.delays {
					if d < c.lo || d > c.hi {
						t.Fatalf("got delay %v, want within [%v, %v]", d, c.lo, c.hi)
					}
				}
			}
		})
	}
}

// TestDecideIsSeeded proves the same seed draws the same fate for every
// frame: a run's network faults are reproducible from its seed.
func TestDecideIsSeeded(t *testing.T) {
	draw := func() []verdict {
		rng := rand.New(rand.NewPCG(7, 7))
		var out []verdict
		for range 500 {
			out = append(out, decide(degradedRule, rng))
		}
		return out
	}
	a, b := draw(), draw()
	for i := range a {
		if a[i].hold != b[i].hold || len(a[i].delays) != len(b[i].delays) {
			t.Fatalf("frame %d: got %+v, then %+v from the same seed", i, a[i], b[i])
		}
		for j := range a[i].delays {
			if a[i].delays[j] != b[i].delays[j] {
				t.Fatalf("frame %d: got delay %v, then %v from the same seed", i, a[i].delays[j], b[i].delays[j])
			}
		}
	}
}

// TestRuleValidate proves a rule out of range is refused with its field
// named.
func TestRuleValidate(t *testing.T) {
	for _, r := range []Rule{{Loss: -0.1}, {Dup: 1.5}, {Reorder: 2}, {Delay: -1}, {Jitter: -1}, {Drop: true, Hold: true}} {
		if err := r.Validate(); err == nil {
			t.Errorf("Validate(%+v): got nil, want an error", r)
		}
	}
	if err := degradedRule.Validate(); err != nil {
		t.Errorf("Validate(degradedRule): got %v, want nil", err)
	}
}
