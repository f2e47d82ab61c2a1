package nemesis

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/wire"
)

// maxPopBytes bounds a pop body the sink reads: no timer body is larger.
const maxPopBytes = wire.MaxBodyBytes

// sink is the callback endpoint: it records every delivery, copies
// included, with the node that sent it (told by its source address:
// each node has its own namespace and address), and answers 200.
type sink struct {
	rec    *recorder
	nodeOf map[string]string // source IP -> node address
}

var _ http.Handler = (*sink)(nil)

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := s.rec.now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPopBytes))
	if err != nil {
		http.Error(w, "cannot read the pop body", http.StatusRequestEntityTooLarge)
		return
	}
	p, err := parsePop(r.Method, r.Header, body)
	if err != nil {
		w.Header().Set(wire.HeaderReason, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	p.At, p.Node, p.URI, p.Answered = at, s.nodeOf[host], "http://"+r.Host+r.URL.Path, http.StatusOK
	if p.Node == "" {
		p.Node = host
	}
	s.rec.pop(p)
	w.WriteHeader(http.StatusOK)
}

// parsePop reads a pop: a POST whose X-Chronos-Timer names the timer (16
// hex digits) and whose X-Sequence-Number counts from 1; the body is the
// opaque data.
func parsePop(method string, h http.Header, body []byte) (checker.Pop, error) {
	if method != http.MethodPost {
		return checker.Pop{}, fmt.Errorf("method %s: a pop is a POST", method)
	}
	timers, seqs := h.Values(wire.HeaderTimerID), h.Values(wire.HeaderSequenceNumber)
	if len(timers) != 1 || len(seqs) != 1 {
		return checker.Pop{}, fmt.Errorf("a pop carries one %s and one %s, got %d and %d",
			wire.HeaderTimerID, wire.HeaderSequenceNumber, len(timers), len(seqs))
	}
	timer, err := wire.ParseID(timers[0])
	if err != nil {
		return checker.Pop{}, fmt.Errorf("%s %.40q: %w", wire.HeaderTimerID, timers[0], err)
	}
	seq, err := strconv.Atoi(seqs[0])
	if err != nil || seq < 1 {
		return checker.Pop{}, errors.New(wire.HeaderSequenceNumber + " is not a number from 1")
	}
	return checker.Pop{Timer: timer, Seq: seq, Opaque: string(body)}, nil
}
