package client

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// FuzzHandlerPop proves the pop parser on any headers and body: the
// handler never panics; it answers 200 exactly when parsePop accepts the
// pop, and then hands the application the pop with its timer in lower
// case, its sequence number as sent and its body byte for byte, and a
// replay of it is dropped; otherwise it answers 400 with a reason.
func FuzzHandlerPop(f *testing.F) {
	f.Add("8123456789abcdef", "1", []byte("opaque"))
	f.Add("8123456789ABCDEF", "4294967295", []byte{})
	f.Add("", "1", []byte("x"))
	f.Add("8123456789abcdef", "", []byte("x"))
	f.Add("812345678gabcdef", "0", []byte("x"))
	f.Add("+123456789abcdef", "+1", []byte("\xff"))
	f.Add("8123456789abcdef", "18446744073709551616", []byte("x"))
	f.Add("8123456789abcdef", "007", []byte("x"))
	f.Fuzz(func(t *testing.T, timer, seq string, body []byte) {
		var got []Pop
		h, err := NewHandler(DefaultHandlerConfig(), func(_ context.Context, p Pop) error {
			got = append(got, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want, parseErr := parsePop(timer, seq, body)
		req := func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/cb", bytes.NewReader(body))
			r.Header["X-Chronos-Timer"] = []string{timer}
			r.Header["X-Sequence-Number"] = []string{seq}
			return r
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req())
		if parseErr != nil {
			if w.Code != http.StatusBadRequest || w.Header().Get("Reason") == "" || len(got) != 0 {
				t.Fatalf("refused pop (%v): %d Reason %q, delivered %d; want 400 with a reason", parseErr, w.Code, w.Header().Get("Reason"), len(got))
			}
			return
		}
		if w.Code != http.StatusOK || len(got) != 1 {
			t.Fatalf("pop %+v: %d, delivered %d; want 200 and delivered once", want, w.Code, len(got))
		}
		p := got[0]
		if p.Timer != strings.ToLower(timer) || len(p.Timer) != 16 || p.Seq == 0 || !bytes.Equal(p.Opaque, body) {
			t.Errorf("delivered %+v from timer %q seq %q", p, timer, seq)
		}
		if n, err := strconv.ParseUint(seq, 10, 64); err != nil || n != p.Seq {
			t.Errorf("Seq %d from %q", p.Seq, seq)
		}
		w = httptest.NewRecorder()
		h.ServeHTTP(w, req())
		if w.Code != http.StatusOK || len(got) != 1 {
			t.Errorf("replay: %d, delivered %d; want 200 and not delivered again", w.Code, len(got))
		}
	})
}
