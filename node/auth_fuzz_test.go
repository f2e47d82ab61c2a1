package node

import (
	"strconv"
	"testing"
	"time"
)

// FuzzStamp drives the parser of an internal request's stamp and the
// whole admission check with any X-Chronos-Sent, X-Chronos-To and
// X-Chronos-Signature values. It proves they never panic, that what the
// parser takes is a time of digits only and a destination within its
// bound, and that admit takes a request only when it is signed with the
// node's key for this node and dated within its window, whatever else it
// holds: a fuzzed signature never passes.
func FuzzStamp(f *testing.F) {
	f.Add("1767225600000", "127.0.0.1:7253", "", int64(0))
	f.Add("+1", "site=site1", "00", int64(-5000))
	f.Add("99999999999999999999", "", "zz", int64(1))
	f.Add("1767225609000", "127.0.0.1:7253", "deadbeef", int64(9000))
	f.Fuzz(func(t *testing.T, sent, to, sig string, offsetMs int64) {
		st, perr := parseStamp(Header{HeaderSent: sent, HeaderTo: to})
		if perr == nil {
			n, err := strconv.ParseUint(sent, 10, 63)
			if err != nil || int64(n) != st.sent || to == "" || len(to) > maxDestinationBytes {
				t.Fatalf("parseStamp took %q and %q as %+v", sent, to, st)
			}
		}
		clock := &manualClock{now: epoch}
		cfg := DefaultConfig()
		cfg.ClusterKey, cfg.Clock, cfg.Network = testKey, clock, &heldNet{}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"IDs":[]}`)
		req := Request{Method: "DELETE", URL: "/timers/references", Body: body,
			Header: Header{HeaderSent: sent, HeaderTo: to, HeaderSignature: sig}}
		if _, ok := n.admit(req); ok {
			t.Fatalf("admitted a request with a fuzzed signature %q", sig)
		}
		// The same stamp, signed with the key: taken exactly when it is
		// for this node and within the window.
		if perr != nil {
			return
		}
		req.Header.Set(HeaderSignature, signature(testKey, req.Method, req.URL, st, body))
		clock.now = time.UnixMilli(st.sent).Add(time.Duration(offsetMs%60_000) * time.Millisecond)
		_, ok := n.admit(req)
		d := time.Duration(offsetMs%60_000) * time.Millisecond
		want := (to == n.self || to == sitePrefix+cfg.LocalSite) && d <= cfg.MaxMessageAge+cfg.MaxClockSkew && -d <= cfg.MaxClockSkew
		if ok != want {
			t.Fatalf("signed request sent %q to %q, %v before the node's clock: admitted %v, want %v", sent, to, d, ok, want)
		}
	})
}
