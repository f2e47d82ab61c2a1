package sim

import (
	"time"
)

// genRecreate adds, drawn from work after every other draw of the plan so
// that it moves no earlier choice, to one scale plan in two whose first
// scale starts 6 s or more into the run, a timer of factor 3, hours
// away, that is deleted and then created again by an update that gives
// no factor, 8 to 4 s before that scale: a PUT to a deleted timer
// creates it with the default factor (api.md), whatever its tombstone
// says, so after the scale exactly the default's replicas hold it live
// (G6). A node that took the tombstone's factor (mutation
// recreate-keeps-tombstone-rf) leaves a third copy that G6 sees; without
// a scale to judge the placement after, nothing did.
func genRecreate(p *Plan, work Source) {
	if !p.enabled(mixScale) || work.IntN("recreate", 2) != 0 {
		return
	}
	first := time.Duration(-1)
	for _, s := range p.Steps {
		if (s.Op == OpScaleUp || s.Op == OpScaleDown) && (first < 0 || s.At < first) {
			first = s.At
		}
	}
	if first < 6*time.Second {
		return
	}
	at := first - 8*time.Second
	if at < 0 {
		at = first - 6*time.Second
	}
	initial := p.InitialMembers()
	via := func(label string) int { return initial[work.IntN(label, len(initial))] }
	c := Step{At: at, Op: OpCreate, Timer: "rc", Client: 1 + work.IntN("client", p.Clients), Via: via("recreate-via"),
		Callback: 1 + work.IntN("cb", p.Callbacks), RF: 3, Interval: time.Hour, RepeatFor: 2 * time.Hour}
	d := Step{At: at + time.Second, Op: OpDelete, Timer: "rc", Client: c.Client, Via: via("recreate-delete-via")}
	u := c
	u.At, u.Op, u.RF, u.Via = at+2*time.Second, OpUpdate, 0, via("recreate-update-via")
	u.Bare = work.IntN("recreate-bare", 2) == 0
	p.Steps = append(p.Steps, c, d, u)
}
