package sim

import (
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
// simulator records as a lost request names the same sending time.
func (w *world) noteTold(at, from string, sent time.Duration, req node.Request) {
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
	w.hist.Told = append(w.hist.Told, checker.Told{At: w.loop.Now(), Sent: sent, From: from, Node: at,
		Timer: id, Opaque: t.Opaque, Seq: int(r.Seq), Missed: r.Missed})
}
