package node

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// FuzzHandle drives one node of a keyed two-node cluster with any sequence
// of requests (any method, path and body, signed with the cluster key or
// not) and clock steps, answering everything the node sends. It proves the
// node never panics, replies exactly once to every request, and never
// issues an ID twice or out of order, whatever it is sent.
//
// The input is a script: requests separated by 0x00, each "<op byte><path>
// \n<body>". The op byte picks the method (low 3 bits), whether the
// request is signed (bit 3), and how far the clock moves first (high bits).
func FuzzHandle(f *testing.F) {
	valid := timerJSON(1, 3, cb, "x")
	f.Add([]byte("\x01/timers\n" + valid + "\x00\x01/timers\n" + valid))
	f.Add([]byte("\x02/timers/ffffffffffffffffffffffffffffffff\n" + valid + "\x00\x01/timers\n" + valid))
	f.Add([]byte("\x0a/timers/0000000000000001ffffffffffffffff\n" +
		`{"timing":{"interval":1,"sequence-number":2,"version":"99"},"callback":{},"reliability":{"replicas":["127.0.0.1:7253"]}}`))
	f.Add([]byte("\x03/timers/0000000000000001ffffffffffffffff\n\x00\xf0/ping\n\x00\x05/ping\n"))
	f.Add([]byte("\x01/timers\n{\"timing\":{\"Interval\":1},\"callback\":{\"http\":{\"uri\":\"http://a\",\"opaque\":\"\xff\"}}}"))
	f.Add([]byte("\x08/timers?node-for-replicas=127.0.0.1:7254&cluster-view-id=1&include-current-view=true\n\x00" +
		"\x0b/timers/references\n{\"IDs\":[{\"ID\":\"0000000000000001\",\"ReplicaIndex\":0}]}"))
	f.Add([]byte("\x01/timers\n" + valid + "\x00\x00/timers/0000000000000001ffffffffffffffff\n\x00" +
		"\x08/timers/0000000000000001ffffffffffffffff?replica=true\n"))
	f.Fuzz(func(t *testing.T, script []byte) {
		self, peer := "127.0.0.1:7253", "127.0.0.1:7254"
		clock, net := &manualClock{now: epoch}, &heldNet{}
		cfg := DefaultConfig()
		cfg.Address, cfg.Cluster, cfg.ClusterKey = self, Membership{Nodes: []string{self, peer}}, testKey
		cfg.Clock, cfg.Network = clock, net
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var lastID uint64
		issued := map[uint64]bool{}
		for _, step := range bytes.Split(script, []byte{0}) {
			if len(step) == 0 {
				continue
			}
			clock.advance(time.Duration(step[0]>>4) * 700 * time.Millisecond)
			req := scriptRequest(step, clock.now.UnixMilli())
			replies := 0
			var resp Response
			n.Handle(req, func(r Response) { replies++; resp = r })
			step := loopBound(t, 10_000, "answering what the node sent")
			for len(net.out) > 0 { // answer everything the node sent, as a healthy peer would
				step()
				out := net.out
				net.out = nil
				for _, s := range out {
					s.done(Response{Status: 200, Header: Header{}}, nil)
				}
			}
			if replies != 1 {
				t.Fatalf("%s %s: replied %d times, want once", req.Method, req.URL, replies)
			}
			if req.Method != "POST" || resp.Status != 200 {
				continue
			}
			id, _, err := wire.ParseWireID(strings.TrimPrefix(resp.Header.Get(wire.HeaderLocation), "/timers/"))
			if err != nil {
				t.Fatalf("POST answered 200 with Location %q: %v", resp.Header.Get(wire.HeaderLocation), err)
			}
			if issued[id] || id <= lastID {
				t.Fatalf("POST issued %016x after %016x: repeated or out of order", id, lastID)
			}
			issued[id], lastID = true, id
		}
	})
}

// scriptRequest decodes one step of a FuzzHandle script; a signed one
// is stamped as sent at now (Unix ms) to the fuzzed node.
func scriptRequest(step []byte, now int64) Request {
	methods := []string{"GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS", "put"}
	path, body, _ := bytes.Cut(step[1:], []byte{'\n'})
	req := Request{Method: methods[step[0]&7], URL: string(path), Header: Header{}, Body: body}
	if step[0]&8 != 0 {
		s := stamp{sent: now, to: "127.0.0.1:7253"}
		req.Header.Set(HeaderSent, strconv.FormatInt(s.sent, 10))
		req.Header.Set(HeaderTo, s.to)
		req.Header.Set(HeaderSignature, signature(testKey, req.Method, req.URL, s, req.Body))
	}
	return req
}
