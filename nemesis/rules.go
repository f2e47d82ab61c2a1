package nemesis

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Rule is what the switch does to the frames of one directed link. The
// zero Rule forwards every frame at once.
type Rule struct {
	// Drop loses every frame: a cut whose traffic is gone for good.
	Drop bool
	// Hold queues every frame (up to MaxHeldFrames a link) until the
	// rule is lifted, then delivers them all: a cut whose traffic the
	// kernel's retransmissions and the switch's queue deliver late, long
	// after the sender gave up, as a real network's buffers can.
	Hold bool
	// Delay and Jitter delay each frame by Delay plus a uniform draw in
	// [-Jitter, +Jitter] (never below 0); frames overtake each other
	// when the jitter exceeds their spacing.
	Delay, Jitter time.Duration
	// Loss, Dup and Reorder are probabilities in [0, 1]: a frame is lost,
	// delivered twice, or held back by ReorderBy more so that later
	// frames overtake it.
	Loss, Dup, Reorder float64
	// ReorderBy is the extra delay of a reordered frame.
	ReorderBy time.Duration
}

// MaxHeldFrames bounds the frames one held link queues; beyond it the
// switch drops them and counts them (Stats.Overflow).
const MaxHeldFrames = 1 << 14

// Validate names the first field out of range.
func (r Rule) Validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Loss", r.Loss}, {"Dup", r.Dup}, {"Reorder", r.Reorder}} {
		if p.v < 0 || p.v > 1 {
			return fmt.Errorf("nemesis: rule %s %v is not a probability in [0, 1]", p.name, p.v)
		}
	}
	switch {
	case r.Delay < 0 || r.Jitter < 0 || r.ReorderBy < 0:
		return fmt.Errorf("nemesis: rule delays %v, %v, %v: none may be negative", r.Delay, r.Jitter, r.ReorderBy)
	case r.Drop && r.Hold:
		return fmt.Errorf("nemesis: a rule drops or holds, not both")
	}
	return nil
}

// clear reports whether r forwards every frame at once.
func (r Rule) clear() bool { return r == Rule{} }

// String is the rule as a fault's detail shows it.
func (r Rule) String() string {
	switch {
	case r.Drop:
		return "drop"
	case r.Hold:
		return "hold"
	case r.clear():
		return "clear"
	}
	return fmt.Sprintf("delay=%v jitter=%v loss=%g dup=%g reorder=%g", r.Delay, r.Jitter, r.Loss, r.Dup, r.Reorder)
}

// verdict is what becomes of one frame: held, or delivered after each
// of delays (none: lost).
type verdict struct {
	hold   bool
	delays []time.Duration
}

// decide applies r to one frame, drawing from rng: the rule engine,
// pure but for the draws, and the switch's only policy.
func decide(r Rule, rng *rand.Rand) verdict {
	switch {
	case r.Drop:
		return verdict{}
	case r.Hold:
		return verdict{hold: true}
	case r.clear():
		return verdict{delays: []time.Duration{0}}
	}
	if r.Loss > 0 && rng.Float64() < r.Loss {
		return verdict{}
	}
	n := 1
	if r.Dup > 0 && rng.Float64() < r.Dup {
		n = 2
	}
	v := verdict{delays: make([]time.Duration, n)}
	for i := range v.delays {
		d := r.Delay
		if r.Jitter > 0 {
			d += time.Duration(rng.Int64N(int64(2*r.Jitter)+1)) - r.Jitter
		}
		if r.Reorder > 0 && rng.Float64() < r.Reorder {
			d += r.ReorderBy
		}
		v.delays[i] = max(d, 0)
	}
	return v
}
