package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
)

const (
	stormWire  = "125f17cd627470001200086205015000" // a timer's ID as a URL carries it
	stormTimer = 0x125f17cd62747000
	stormFrom  = "10.0.0.1:7253"
	stormTo    = "10.0.0.2:7253"
)

// stormPush is a repair push of one record, the start delta as the
// sender's clock has it at at.
func stormPush(at time.Duration, seq int) node.Request {
	body := fmt.Sprintf(`{"timing":{"interval":3600,"start-time-delta":%d,"sequence-number":%d,"version":"1"}}`, -at.Milliseconds(), seq)
	return node.Request{Method: "PUT", URL: "http://" + stormTo + "/timers/" + stormWire, Body: []byte(body)}
}

// stormRun feeds a watch from liveness at 1 min: the same record refused
// with 503 every interval for ten minutes (a storm), or, quiet, a write's
// retries (eight tries within two minutes) and then the timer's pop
// notices every interval, each with its own sequence number.
func stormRun(storm bool, apart ...bool) *stormWatch {
	s := newStormWatch(time.Minute, node.DefaultRepairInterval)
	for i := range 8 {
		at := time.Minute + time.Duration(i)*15*time.Second
		s.served(at, stormFrom, stormTo, stormPush(at, 0), 503, false)
	}
	for i := range 24 {
		at := 3*time.Minute + time.Duration(i)*node.DefaultRepairInterval
		seq := 1 + i
		if storm {
			seq = 0
		}
		s.served(at, stormFrom, stormTo, stormPush(at, seq), 503, len(apart) > 0 && apart[0])
		digests := fmt.Sprintf(`{"digests":["%016x"]}`, i)
		s.served(at, stormFrom, stormTo, node.Request{Method: "POST", URL: "http://" + stormTo + "/timers/repair", Body: []byte(digests)}, 200, false)
	}
	return &s
}

// TestStormCheck proves the storm check fails a run whose node sends a
// peer the same record every repair interval for ten minutes, with the
// window's figures (which nodes, which kind of message, how many, how
// answered), and passes one that sends the same record only while a
// retry policy lasts and every later message about it changed: the
// start delta, which moves with the sender's clock, does not make two
// sends of one record two messages.
func TestStormCheck(t *testing.T) {
	vs, _ := stormRun(true).check(nil)
	if len(vs) != 1 {
		t.Fatalf("a record pushed every interval for ten minutes: %d violations, want 1: %v", len(vs), vs)
	}
	v := vs[0]
	for _, want := range []string{stormFrom + " sent " + stormTo, "PUT /timers/{id}", "in 20 of the 20 repair intervals",
		"(503 x32)", "POST /timers/repair 16 (0 refused)", "PUT /timers/{id} 24 (24 refused)"} {
		if !strings.Contains(v.Message, want) {
			t.Errorf("violation %q does not say %q", v.Message, want)
		}
	}
	if v.Guarantee != "STORM" || v.Timer != stormTimer || v.At != time.Minute {
		t.Errorf("violation %s at %v timer %x, want STORM at 1m0s timer %x", v.Guarantee, v.At, v.Timer, uint64(stormTimer))
	}
	if vs, _ := stormRun(false).check(nil); len(vs) != 0 {
		t.Errorf("retries and then a notice per pop: %v, want no storm", vs)
	}
}

// TestStormExcuses proves each excuse of the storm check is needed and
// bounded: an overload fault of the sender or the receiver in every
// interval excuses the storm (counted), one of a third node does not;
// clocks of the two apart by more than MaxClockSkew while they trade it
// excuse it (counted), and the same storm between agreeing clocks is
// TestStormCheck's. A record whose ID carries the instance number two
// misconfigured members share has no excuse (scenarios/README.md U27).
func TestStormExcuses(t *testing.T) {
	overload := func(addr string) []checker.Fault {
		var fs []checker.Fault
		for i := range 30 {
			fs = append(fs, checker.Fault{At: time.Minute + time.Duration(i)*node.DefaultRepairInterval, Kind: checker.Overload, Nodes: []string{addr}, Peers: []string{"10.0.0.9:7253"}})
		}
		return fs
	}
	for _, n := range []string{stormFrom, stormTo} {
		vs, excused := stormRun(true).check(overload(n))
		if len(vs) != 0 || excused["overload"] != 1 {
			t.Errorf("overloaded %s: %v, excused %v; want no storm, overload=1", n, vs, excused)
		}
	}
	if vs, _ := stormRun(true).check(overload("10.0.0.3:7253")); len(vs) != 1 {
		t.Errorf("a third node overloaded: %d violations, want the storm", len(vs))
	}
	if vs, excused := stormRun(true, true).check(nil); len(vs) != 0 || excused["clock-apart"] != 1 {
		t.Errorf("clocks apart: %v, excused %v; want no storm, clock-apart=1", vs, excused)
	}
}
