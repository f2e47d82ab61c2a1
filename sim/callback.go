package sim

import (
	"strconv"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// callback is one simulated client callback endpoint. It records every pop
// it receives and answers as its mode says: at once with 200, after a
// delay (a slow client, beyond the 2 s the service allows), or with an
// error status.
type callback struct {
	idx    int
	host   string
	delay  time.Duration // > 0: slow
	status int           // != 0: failing with this status
}

func (w *world) newCallback(i int) *callback {
	cb := &callback{idx: i, host: callbackHost(i)}
	w.net.Listen(cb.host, func(from string, _ time.Duration, req node.Request, reply func(node.Response)) {
		w.receivePop(cb, from, req, reply)
	}, false)
	return cb
}

func (w *world) receivePop(cb *callback, from string, req node.Request, reply func(node.Response)) {
	seq, _ := strconv.Atoi(req.Header.Get(wire.HeaderSequenceNumber))
	timer, _ := strconv.ParseUint(req.Header.Get(wire.HeaderTimerID), 16, 64)
	status := 200
	if cb.status != 0 {
		status = cb.status
	}
	if req.Method != "POST" {
		status = 405
	}
	w.hist.Pops = append(w.hist.Pops, checker.Pop{At: w.loop.Now(), Node: from, Timer: timer, URI: "http://" + cb.host + req.URL,
		Opaque: string(req.Body), Seq: seq, Answered: status})
	w.tr.event("pop", from, cb.host+" "+string(req.Body), int64(seq))
	if cb.delay > 0 {
		w.loop.After(cb.delay, func() { reply(node.Response{Status: status}) })
		return
	}
	reply(node.Response{Status: status})
}
