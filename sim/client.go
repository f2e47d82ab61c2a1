package sim

import (
	"fmt"
	"strings"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// timerRef is what the clustered client knows about one timer label: the
// wire ID of its last successful create or update.
type timerRef struct {
	wid string
	id  uint64
}

// wireOf is the wire ID step s names the timer by: the Location it was
// given, or its bare unique ID (no replica bits) for a bare step.
func (r *timerRef) wireOf(s Step) string {
	if s.Bare {
		return wire.FormatWireID(r.id, 0)
	}
	return r.wid
}

// clientOp is one client operation in progress, tried node after node.
type clientOp struct {
	s       Step
	kind    checker.Kind
	attempt int
}

// clientOperation starts a create, update or delete from the plan.
func (w *world) clientOperation(s Step) {
	kind := map[Op]checker.Kind{OpCreate: checker.Create, OpUpdate: checker.Update, OpDelete: checker.Delete}[s.Op]
	ref := w.timers[s.Timer]
	if kind != checker.Create && (ref == nil || ref.wid == "") {
		// The client never learned an ID for this timer: nothing to do.
		w.tr.event("skip", string(s.Op), s.Timer, 0)
		return
	}
	w.attempt(&clientOp{s: s, kind: kind})
}

// attempt sends the operation to the next node and records it as an Op.
// Nodes are tried from s.Via on, round the cluster, once each; the
// clustered client knows the cluster's nodes, so it passes over machines
// outside it (not yet joined, or gone).
func (w *world) attempt(c *clientOp) {
	s := c.s
	m := w.machines[(s.Via-1+c.attempt)%w.plan.Nodes]
	for tries := 1; m.out && tries < w.plan.Nodes; tries++ {
		c.attempt++
		m = w.machines[(s.Via-1+c.attempt)%w.plan.Nodes]
	}
	c.attempt++
	seq := len(w.hist.Ops)
	op := checker.Op{Seq: seq, Client: s.Client, Node: m.addr, Kind: c.kind, Invoke: w.loop.Now()}
	req := node.Request{Header: node.Header{}}
	switch {
	case c.kind == checker.Create && s.ID != 0:
		// A client-chosen ID: the create is a PUT to a new ID.
		req.Method, req.URL = "PUT", "http://"+m.addr+"/timers/"+wire.FormatWireID(s.ID, 0)
		op.Timer = s.ID
	case c.kind == checker.Create:
		req.Method, req.URL = "POST", "http://"+m.addr+"/timers"
	case c.kind == checker.Update:
		req.Method, req.URL = "PUT", "http://"+m.addr+"/timers/"+w.timers[s.Timer].wireOf(s)
	case c.kind == checker.Delete:
		req.Method, req.URL = "DELETE", "http://"+m.addr+"/timers/"+w.timers[s.Timer].wireOf(s)
	}
	if c.kind != checker.Create {
		op.Timer = w.timers[s.Timer].id
	}
	if c.kind != checker.Delete {
		def := wire.Timer{Interval: s.Interval, RepeatFor: s.RepeatFor, URI: callbackURI(s.Callback),
			Opaque: fmt.Sprintf("%s.%d", s.Timer, seq), ReplicationFactor: s.RF}
		op.Spec = checker.SpecOf(def)
		req.Body = timerBody(def, s.Tag)
		req.Header.Set(node.HeaderContentType, "application/json")
	}
	w.hist.Ops = append(w.hist.Ops, op)
	w.tr.event("invoke", clientHost(s.Client), m.addr+" "+req.Method+" "+s.Timer, int64(seq))
	w.clients[s.Client-1].Send(req, w.opts.ClientTimeout, func(resp node.Response, err error) {
		w.returned(c, seq, resp, err)
	})
}

// returned records the outcome of attempt seq and fails over if needed.
func (w *world) returned(c *clientOp, seq int, resp node.Response, err error) {
	op := &w.hist.Ops[seq]
	op.Return = w.loop.Now()
	op.Status = resp.Status
	switch {
	case err == nil && resp.Status >= 200 && resp.Status < 300:
		op.Outcome = checker.OK
	case err == nil && resp.Status >= 400 && resp.Status < 500:
		op.Outcome = checker.Failed
	default:
		op.Outcome = checker.Unknown
	}
	w.tr.event("return", op.Node, op.Outcome.String(), int64(resp.Status))
	if op.Outcome == checker.OK {
		w.learn(c, op, resp)
		return
	}
	if op.Outcome == checker.Unknown && c.attempt < w.plan.Nodes {
		w.loop.After(retryBackoff, func() { w.attempt(c) })
	}
}

// retryBackoff is how long a client waits before trying the next node.
const retryBackoff = 100_000_000 // 100 ms

// learn takes the timer ID from a successful create or update.
func (w *world) learn(c *clientOp, op *checker.Op, resp node.Response) {
	if c.kind == checker.Delete {
		return
	}
	loc := resp.Header.Get(wire.HeaderLocation)
	wid, ok := strings.CutPrefix(loc, "/timers/")
	id, _, err := wire.ParseWireID(wid)
	if !ok || err != nil {
		w.apiError(op, fmt.Sprintf("%s answered %d with Location %q, want /timers/<32 hex>", op.Node, op.Status, loc))
		return
	}
	if (c.kind == checker.Update || c.s.ID != 0) && id != op.Timer {
		w.apiError(op, fmt.Sprintf("update of %016x answered with Location %q: the unique ID changed", op.Timer, loc))
		return
	}
	op.Timer = id
	w.timers[c.s.Timer] = &timerRef{wid: wid, id: id}
}

func (w *world) apiError(op *checker.Op, msg string) {
	w.apiErrs = append(w.apiErrs, checker.Violation{Guarantee: "API", At: op.Return, Timer: op.Timer, Message: msg})
	w.tr.note("API violation: %s", msg)
}

// timerBody is the client API JSON body for a definition, as the step
// gave it, and an optional statistics tag ("<type>:<count>").
func timerBody(def wire.Timer, tag string) []byte {
	if typ, count, err := parseTag(tag); err == nil {
		def.Tags = []wire.Tag{{Type: typ, Count: count}}
	}
	return wire.Encode(def)
}
