package nemesis

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/wire"
)

// TestSinkRecordsEveryCopy proves the sink records each delivery, a
// copy included, with the node its source address names, and refuses
// what is no pop with the reason.
func TestSinkRecordsEveryCopy(t *testing.T) {
	rec := newRecorder(nil)
	s := &sink{rec: rec, nodeOf: map[string]string{"198.18.0.1": "198.18.0.1:7253"}}
	send := func(method, timer, seq string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://198.18.0.200:9999/cb", strings.NewReader("hello"))
		r.RemoteAddr = "198.18.0.1:40000"
		if timer != "" {
			r.Header.Set(wire.HeaderTimerID, timer)
		}
		if seq != "" {
			r.Header.Set(wire.HeaderSequenceNumber, seq)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	for range 2 {
		if w := send(http.MethodPost, "0cac6485941d7000", "3"); w.Code != http.StatusOK {
			t.Fatalf("a pop: got %d, want 200", w.Code)
		}
	}
	for _, bad := range [][3]string{{http.MethodGet, "0cac6485941d7000", "1"}, {http.MethodPost, "xyz", "1"},
		{http.MethodPost, "0cac6485941d7000", "0"}, {http.MethodPost, "", "1"}} {
		if w := send(bad[0], bad[1], bad[2]); w.Code != http.StatusBadRequest || w.Header().Get(wire.HeaderReason) == "" {
			t.Errorf("%v: got %d with reason %q, want 400 with a reason", bad, w.Code, w.Header().Get(wire.HeaderReason))
		}
	}
	pops := rec.record(0, DefaultConfig().Bounds).History.Pops
	if len(pops) != 2 {
		t.Fatalf("got %d pops recorded, want 2 (the copy too)", len(pops))
	}
	if p := pops[0]; p.Node != "198.18.0.1:7253" || p.Seq != 3 || p.Opaque != "hello" || p.Timer != 0x0cac6485941d7000 ||
		p.URI != "http://198.18.0.200:9999/cb" {
		t.Errorf("got pop %+v, want seq 3 of timer 0cac6485941d7000 from 198.18.0.1:7253 with body hello", p)
	}
}

// FuzzParsePop proves the sink's parser never panics, and accepts only
// a POST naming a timer and a sequence number from 1.
func FuzzParsePop(f *testing.F) {
	f.Add("POST", "0cac6485941d7000", "1", []byte("x"))
	f.Add("POST", "0CAC6485941D7000", "18446744073709551615", []byte{})
	f.Add("GET", "", "-1", []byte("\xff"))
	f.Fuzz(func(t *testing.T, method, timer, seq string, body []byte) {
		h := http.Header{}
		h.Set(wire.HeaderTimerID, timer)
		h.Set(wire.HeaderSequenceNumber, seq)
		p, err := parsePop(method, h, body)
		if err != nil {
			return
		}
		if method != http.MethodPost || p.Seq < 1 || p.Opaque != string(body) {
			t.Fatalf("accepted %s %q seq %q as %+v", method, timer, seq, p)
		}
	})
}
