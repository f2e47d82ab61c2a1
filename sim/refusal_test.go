package sim

import (
	"strconv"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// TestAheadRefusalLastsUntilTheReceiversClockReachesTheVersion proves the
// simulator's record of a refusal of a version dated more than twice
// MaxClockLead after the receiver's clock (scenarios/README.md C47,
// fresh seed 4984840): the lost request's Until is the true time the
// receiver's clock reaches the version's date less twice the lead, read
// from the version in the request, and it follows the receiver's clock
// as it moves later: a step back puts it off, a slow drift stretches it,
// a step past the date ends it at the step, and nothing moves it once it
// has ended. A change of another machine's clock leaves it alone.
func TestAheadRefusalLastsUntilTheReceiversClockReachesTheVersion(t *testing.T) {
	w := &world{plan: &Plan{}}
	w.tr = newTracer(nil, w.loop.Now)
	nop := func(uint64, func()) {}
	sender := &machine{idx: 1, addr: "a", clock: newClock(&w.loop, 3*time.Minute, 0, nop)}
	receiver := &machine{idx: 2, addr: "b", clock: newClock(&w.loop, 0, 0, nop)}
	other := &machine{idx: 3, addr: "c", clock: newClock(&w.loop, 0, 0, nop)}
	w.machines = []*machine{sender, receiver, other}

	lead := node.DefaultConfig().MaxClockLead
	dated := Epoch.Add(10*time.Second + 3*time.Minute) // the sender's clock at 10 s
	const idEpochMs, timeShift = 1577836800000, 22     // node/id.go's layout
	version := uint64(dated.UnixMilli()-idEpochMs) << timeShift
	if got := node.IDTime(version); got != dated.UnixMilli() {
		t.Fatalf("version %d dated %d, want %d", version, got, dated.UnixMilli())
	}
	const id = 0x125f18ae87f47000
	body := wire.AppendReplication(nil, &wire.Timer{URI: "http://cb/x", Interval: time.Hour, RepeatFor: time.Hour, ReplicationFactor: 2},
		&wire.Replication{Version: version, Replicas: []string{"a", "b"}})
	if _, r, err := wire.Parse(body); err != nil || r == nil || r.Version != version {
		t.Fatalf("body %s parses as %v, %v", body, r, err)
	}
	refuse := func() {
		h := node.Header{}
		h.Set(node.HeaderSent, strconv.FormatInt(sender.clock.Now().UnixMilli(), 10))
		req := node.Request{Method: "PUT", URL: "http://b/timers/" + wire.FormatWireID(id, 0), Header: h, Body: body}
		resp := node.Response{Status: 400, Header: node.Header{}}
		resp.Header.Set(wire.HeaderReason, "timing.version "+strconv.FormatUint(version, 10)+
			" is dated 180000 ms after this node's clock, more than twice MaxClockLead ahead")
		w.aheadRefusal(receiver, sender.addr, w.loop.Now(), req, resp)
	}
	jump := func(m *machine, d time.Duration) {
		m.clock.Jump(d)
		w.fault(checker.ClockJump, []string{m.addr}, nil, signed(d))
	}
	drift := func(m *machine, ppm int64) {
		m.clock.SetDrift(ppm)
		w.fault(checker.ClockDrift, []string{m.addr}, nil, strconv.FormatInt(ppm, 10)+"ppm")
	}
	// The receiver's clock reads true time: it takes the version from
	// 10 s + 3 min - 2 x lead.
	taken := 10*time.Second + 3*time.Minute - 2*lead
	steps := []struct {
		at   time.Duration
		do   func()
		want time.Duration // the refusal's Until after the step
	}{
		{10 * time.Second, refuse, taken},
		{20 * time.Second, func() { jump(receiver, -5*time.Second) }, taken + 5*time.Second},
		{25 * time.Second, func() { jump(other, -time.Minute) }, taken + 5*time.Second},
		// From 30 s the clock runs 1% slow: the 45 s of its reading
		// left take 40 s / 0.99 of true time (rounded up to the ns).
		{30 * time.Second, func() { drift(receiver, -10_000) }, 30*time.Second + 45*time.Second*100/99 + 1},
		{40 * time.Second, func() { jump(receiver, time.Minute) }, 40 * time.Second},
		{50 * time.Second, func() { jump(receiver, -2*time.Minute) }, 40 * time.Second},
	}
	for _, s := range steps {
		w.loop.At(s.at, func() {
			s.do()
			if len(w.hist.Faults) == 0 || w.hist.Faults[0].Kind != checker.Lost {
				t.Fatalf("at %v: faults %v, want the refusal first", s.at, w.hist.Faults)
			}
			f := w.hist.Faults[0]
			if f.Until != s.want {
				t.Errorf("at %v: the refusal lasts until %v, want %v", s.at, f.Until, s.want)
			}
			if f.Timer != id || f.Peers[0] != receiver.addr || f.Nodes[0] != sender.addr {
				t.Errorf("at %v: refusal %+v, want timer %x from %s to %s", s.at, f, id, sender.addr, receiver.addr)
			}
		})
	}
	w.loop.Run()
	if len(w.apiErrs) != 0 {
		t.Errorf("API violations: %v", w.apiErrs)
	}
}
