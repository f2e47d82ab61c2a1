package sim

import (
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// noteTold records that node at is being handed req from node from, sent
// at sent, when req carries a live record of a definition that has popped
// (a pop notice, a repair push, a hand-off: an internal PUT whose record
// has a sequence number): its receiver is told which pops up to that
// number were made (checker.Told). Taken from the message the network
// delivers, never from the receiver's answer; a refusal of it the
// simulator records as a lost request names the same sending time. nd is
// the receiver, as it is when handed req: whether it holds a record of
// the timer then is Told.Held.
func (w *world) noteTold(at, from string, sent time.Duration, req node.Request, nd *node.Node) {
	if req.Method != "PUT" || req.Header.Get(node.HeaderSent) == "" {
		return
	}
	t, r, err := wire.Parse(req.Body)
	if err != nil || r == nil || r.Seq == 0 || t.URI == "" {
		return
	}
	id := timerOfURL(req.URL)
	if id == 0 {
		return
	}
	held := false
	if nd != nil {
		_, held = nd.Timer(id)
	}
	w.hist.Told = append(w.hist.Told, checker.Told{At: w.loop.Now(), Sent: sent, From: from, Node: at,
		Timer: id, Opaque: t.Opaque, Seq: int(r.Seq), Missed: r.Missed, Held: held, StartDelta: r.StartTimeDelta, RF: t.ReplicationFactor})
}

// noteAnswer wraps done, the handler of the answer to req that node self
// sent, to record the answer to a record of a popped definition that
// says which pops its sender made (node.HeaderPopped, "<seq> <missed>"),
// as a record of those pops handed to self when it takes the answer: a
// replica that made a pop the record marked missed says so, and the
// node stops telling of it and owes it no more (docs/design.md 4.7). Only
// an answer that reaches no further than the record's own sequence
// number is recorded: the node takes no answer ahead of the record it
// holds (node's learnPopped).
func (w *world) noteAnswer(self string, req node.Request, done func(node.Response, error)) func(node.Response, error) {
	if req.Method != "PUT" || req.Header.Get(node.HeaderSent) == "" {
		return done
	}
	return func(resp node.Response, err error) {
		if popped := resp.Header.Get(node.HeaderPopped); err == nil && popped != "" && resp.Status >= 200 && resp.Status <= 299 {
			w.toldByAnswer(self, req, popped)
		}
		done(resp, err)
	}
}

// toldByAnswer records the answer popped to req, a record self sent, as
// a checker.Told handed to self now (Sent: -1, no request of its own).
func (w *world) toldByAnswer(self string, req node.Request, popped string) {
	seqText, missedText, ok := strings.Cut(popped, " ")
	seq, err1 := strconv.ParseUint(seqText, 10, 32)
	missed, err2 := strconv.ParseUint(missedText, 10, 32)
	if !ok || err1 != nil || err2 != nil || seq == 0 {
		return
	}
	t, r, err := wire.Parse(req.Body)
	if err != nil || r == nil || t.URI == "" || uint64(r.Seq) < seq {
		return
	}
	peer, _, _ := strings.Cut(strings.TrimPrefix(req.URL, "http://"), "/")
	w.hist.Told = append(w.hist.Told, checker.Told{At: w.loop.Now(), Sent: -1, From: peer, Node: self,
		Timer: timerOfURL(req.URL), Opaque: t.Opaque, Seq: int(seq), Missed: uint32(missed)})
}
