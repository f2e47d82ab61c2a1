package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/netsim"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// TestOverloadRecordsTheWaitUntilTheMessageLeft proves that an Overload
// fault's recorded wait ends when its message left its sender (what the
// checker's leftAfter reads), its own write included, not when the
// sender's CPU began to write it: a crash in the write takes the message
// (scenarios/README.md C30, where 6 ms of write told a callback the
// crash took from one that had left), and that a callback's names the
// pop it carried, which a crash that takes it takes whenever it was made
// (scenarios/README.md C34).
func TestOverloadRecordsTheWaitUntilTheMessageLeft(t *testing.T) {
	opts := netsim.DefaultOptions()
	opts.NodeWorkers, opts.NodeSendTime = 1, 6*time.Millisecond
	w := &world{plan: &Plan{Net: opts}}
	net, err := netsim.New(opts, &w.loop, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	net.SetTracer(func(what, from, to string, req *node.Request, n int64) {
		if what == "queued" || what == "shed" {
			w.overloadFault(from, to, req, time.Duration(n))
		}
	})
	left := map[string]time.Duration{}
	net.Listen("b", func(_ string, sent time.Duration, req node.Request, reply func(node.Response)) {
		left[req.URL] = sent
		reply(node.Response{Status: 200})
	}, false)
	a := net.Listen("a", nil, true)
	for i := range 20 {
		h := node.Header{}
		h.Set(wire.HeaderSequenceNumber, strconv.Itoa(i))
		a.Send(node.Request{Method: "POST", URL: fmt.Sprintf("http://b/cb/%d", i), Header: h}, time.Second, func(node.Response, error) {})
	}
	w.loop.Run()
	if len(w.hist.Faults) == 0 {
		t.Fatal("no send waited long enough to be recorded")
	}
	for i, f := range w.hist.Faults {
		v, ok := strings.CutPrefix(f.Detail, checker.OverloadWaited)
		v, seq, _ := strings.Cut(v, " "+checker.CallbackDetail)
		wait, err := time.ParseDuration(v)
		if !ok || err != nil {
			t.Fatalf("fault %d: detail %q", i, f.Detail)
		}
		// The faults come in send order, after the first sends, whose
		// waits the 50 ms threshold leaves unrecorded.
		n := 20 - len(w.hist.Faults) + i
		if want := strconv.Itoa(n); seq != want {
			t.Errorf("fault %d: detail %q names callback %q, want %s", i, f.Detail, seq, want)
		}
		target := fmt.Sprintf("/cb/%d", n)
		if got, want := f.At+wait, left[target]; got != want {
			t.Errorf("%s: recorded as left at %v (%v + %v), left at %v", target, got, f.At, wait, want)
		}
	}
}
