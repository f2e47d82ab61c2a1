package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"
)

// app records the pops a handler delivers and answers as told.
type app struct {
	mu   sync.Mutex
	pops []Pop
	fail error
}

func (a *app) take(_ context.Context, p Pop) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		return a.fail
	}
	a.pops = append(a.pops, p)
	return nil
}

func (a *app) delivered() []Pop {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Pop(nil), a.pops...)
}

func newTestHandler(t *testing.T, cfg HandlerConfig, fn PopFunc) *Handler {
	t.Helper()
	h, err := NewHandler(cfg, fn)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// popRequest is a pop as a node sends it.
func popRequest(timer, seq, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/cb", strings.NewReader(body))
	if timer != "" {
		r.Header.Set("X-Chronos-Timer", timer)
	}
	if seq != "" {
		r.Header.Set("X-Sequence-Number", seq)
	}
	return r
}

// serve sends r to h and returns the status and Reason.
func serve(h http.Handler, r *http.Request) (int, string) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Header().Get("Reason")
}

const timerA = "8123456789abcdef"

// TestHandlerDropsReplayedPop proves that a pop is delivered once and a
// replay of it (the same timer, sequence number and body) is answered 200
// without being delivered, while the next sequence number, another timer
// and the same number with other opaque data (an updated definition) are
// each delivered.
func TestHandlerDropsReplayedPop(t *testing.T) {
	a := &app{}
	var dups []Pop
	cfg := DefaultHandlerConfig()
	cfg.OnDuplicate = func(p Pop) { dups = append(dups, p) }
	h := newTestHandler(t, cfg, a.take)
	for _, p := range []struct{ timer, seq, body string }{
		{timerA, "1", "x"},
		{timerA, "1", "x"},                  // replay
		{strings.ToUpper(timerA), "1", "x"}, // the same header, another spelling
		{timerA, "2", "x"},
		{"0000000000000001", "1", "x"},
		{timerA, "1", "updated"},
	} {
		if status, why := serve(h, popRequest(p.timer, p.seq, p.body)); status != http.StatusOK {
			t.Fatalf("pop %+v: %d %s, want 200", p, status, why)
		}
	}
	want := []Pop{{timerA, 1, []byte("x")}, {timerA, 2, []byte("x")}, {"0000000000000001", 1, []byte("x")}, {timerA, 1, []byte("updated")}}
	got := a.delivered()
	if len(got) != len(want) {
		t.Fatalf("delivered %d pops %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i].Timer != want[i].Timer || got[i].Seq != want[i].Seq || string(got[i].Opaque) != string(want[i].Opaque) {
			t.Errorf("pop %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := h.Stats(); s.Delivered != 4 || s.Duplicates != 2 || len(dups) != 2 {
		t.Errorf("stats %+v and %d OnDuplicate calls, want 4 delivered and 2 duplicates", s, len(dups))
	}
	if !got[0].Of("8123456789ABCDEF0000000000000000") || got[2].Of(timerA+"0000000000000000") {
		t.Error("Pop.Of does not match the pop's timer to its ID")
	}
}

// TestHandlerRefusesBadPops proves that every malformed pop is refused
// with its status and a reason (in the Reason header and the body), and
// never reaches the application.
func TestHandlerRefusesBadPops(t *testing.T) {
	a := &app{}
	cfg := DefaultHandlerConfig()
	cfg.MaxOpaqueBytes = 8
	h := newTestHandler(t, cfg, a.take)
	repeated := popRequest(timerA, "1", "")
	repeated.Header.Add("X-Sequence-Number", "2")
	get := popRequest(timerA, "1", "")
	get.Method = http.MethodGet
	unknownLength := popRequest(timerA, "1", "123456789")
	unknownLength.ContentLength = -1
	tests := []struct {
		name   string
		req    *http.Request
		status int
		reason string
	}{
		{"GET", get, 405, "method not allowed; allowed: POST"},
		{"no timer", popRequest("", "1", ""), 400, "X-Chronos-Timer is missing"},
		{"timer short", popRequest("abc", "1", ""), 400, `X-Chronos-Timer "abc" is not 16 hex digits`},
		{"timer not hex", popRequest("812345678gabcdef", "1", ""), 400, "is not 16 hex digits"},
		{"timer signed", popRequest("+123456789abcdef", "1", ""), 400, "is not 16 hex digits"},
		{"no sequence number", popRequest(timerA, "", ""), 400, "X-Sequence-Number is missing"},
		{"sequence number 0", popRequest(timerA, "0", ""), 400, `X-Sequence-Number "0" is not a decimal number from 1`},
		{"sequence number negative", popRequest(timerA, "-1", ""), 400, "is not a decimal number"},
		{"sequence number signed", popRequest(timerA, "+1", ""), 400, "is not a decimal number"},
		{"sequence number fraction", popRequest(timerA, "1.5", ""), 400, "is not a decimal number"},
		{"sequence number too large", popRequest(timerA, "18446744073709551616", ""), 400, "is not a decimal number"},
		{"sequence number long", popRequest(timerA, strings.Repeat("9", 100), ""), 400, `"... is not`},
		{"sequence number repeated", repeated, 400, "X-Sequence-Number is repeated"},
		{"body too large", popRequest(timerA, "1", "123456789"), 413, "pop body larger than 8 bytes"},
		{"body too large, length unknown", unknownLength, 413, "pop body larger than 8 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, tt.req)
			why := w.Header().Get("Reason")
			if w.Code != tt.status || !strings.Contains(why, tt.reason) || w.Body.String() != why {
				t.Errorf("%d Reason %q body %q, want %d with %q in both", w.Code, why, w.Body.String(), tt.status, tt.reason)
			}
		})
	}
	if got := a.delivered(); len(got) != 0 {
		t.Errorf("delivered %+v, want nothing", got)
	}
	if s := h.Stats(); s.Refused != uint64(len(tests)) {
		t.Errorf("Refused = %d, want %d", s.Refused, len(tests))
	}
}

// TestHandlerFailureIsNotRemembered proves that a pop the application
// failed to take is answered 500 and not remembered, so that the next
// replica's copy of it is delivered.
func TestHandlerFailureIsNotRemembered(t *testing.T) {
	a := &app{fail: errors.New("database down")}
	h := newTestHandler(t, DefaultHandlerConfig(), a.take)
	if status, why := serve(h, popRequest(timerA, "1", "x")); status != 500 || why != "pop not taken: database down" {
		t.Fatalf("pop while the app fails: %d %q, want 500 with the app's error", status, why)
	}
	a.mu.Lock()
	a.fail = nil
	a.mu.Unlock()
	if status, _ := serve(h, popRequest(timerA, "1", "x")); status != 200 || len(a.delivered()) != 1 {
		t.Fatalf("next replica's copy: %d, delivered %d, want 200 and delivered", status, len(a.delivered()))
	}
	if s := h.Stats(); s.Failed != 1 || s.Delivered != 1 || s.Duplicates != 0 {
		t.Errorf("stats %+v, want 1 failed, 1 delivered", s)
	}
}

// TestHandlerForget proves that after Forget a timer's pops are delivered
// again even with the same opaque data, as an update that kept it needs.
func TestHandlerForget(t *testing.T) {
	a := &app{}
	h := newTestHandler(t, DefaultHandlerConfig(), a.take)
	serve(h, popRequest(timerA, "1", "x"))
	serve(h, popRequest("0000000000000001", "1", "x"))
	h.Forget(ID(timerA + "00000000000000ff"))
	serve(h, popRequest(timerA, "1", "x"))
	serve(h, popRequest("0000000000000001", "1", "x"))
	if got := len(a.delivered()); got != 3 {
		t.Errorf("delivered %d, want 3: the forgotten timer's pop again, the other's not", got)
	}
}

// TestHandlerWindow proves the time bound: a copy within Window of the
// delivery is dropped, one after it is delivered (on a synctest clock).
func TestHandlerWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &app{}
		h := newTestHandler(t, DefaultHandlerConfig(), a.take)
		serve(h, popRequest(timerA, "1", "x"))
		time.Sleep(DefaultWindow - time.Nanosecond)
		serve(h, popRequest(timerA, "1", "x"))
		if got := len(a.delivered()); got != 1 {
			t.Fatalf("delivered %d within the window, want 1", got)
		}
		time.Sleep(time.Nanosecond)
		serve(h, popRequest(timerA, "1", "x"))
		if got := len(a.delivered()); got != 2 {
			t.Fatalf("delivered %d once the window passed, want 2", got)
		}
	})
}

// TestHandlerMaxPops proves the count bound: past MaxPops the oldest pop
// is forgotten (its copy is delivered again), the newer ones are not.
func TestHandlerMaxPops(t *testing.T) {
	a := &app{}
	cfg := DefaultHandlerConfig()
	cfg.MaxPops = 2
	h := newTestHandler(t, cfg, a.take)
	for _, seq := range []string{"1", "2", "3", "3", "2", "1"} {
		serve(h, popRequest(timerA, seq, "x"))
	}
	var seqs []string
	for _, p := range a.delivered() {
		seqs = append(seqs, strconv.FormatUint(p.Seq, 10))
	}
	if got := strings.Join(seqs, " "); got != "1 2 3 1" {
		t.Errorf("delivered %s, want 1 2 3 1 (1 forgotten for 3)", got)
	}
}

// TestHandlerConcurrentCopy proves that a copy arriving while the first
// is being delivered waits for it: dropped if the first was taken,
// delivered if it failed. synctest.Wait shows the copy blocked.
func TestHandlerConcurrentCopy(t *testing.T) {
	for _, firstFails := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan error)
			var calls int
			var mu sync.Mutex
			h := newTestHandler(t, DefaultHandlerConfig(), func(ctx context.Context, p Pop) error {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n == 1 {
					return <-release
				}
				return nil
			})
			statuses := make(chan int, 2)
			go func() { s, _ := serve(h, popRequest(timerA, "1", "x")); statuses <- s }()
			synctest.Wait()
			go func() { s, _ := serve(h, popRequest(timerA, "1", "x")); statuses <- s }()
			synctest.Wait()
			mu.Lock()
			if calls != 1 {
				t.Fatalf("%d deliveries while the first is under way, want 1", calls)
			}
			mu.Unlock()
			var err error
			if firstFails {
				err = errors.New("busy")
			}
			release <- err
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			want := map[bool]int{false: 1, true: 2}[firstFails]
			if calls != want {
				t.Errorf("first fails %v: %d deliveries, want %d", firstFails, calls, want)
			}
			if s1, s2 := <-statuses, <-statuses; s1+s2 != map[bool]int{false: 400, true: 700}[firstFails] {
				t.Errorf("first fails %v: statuses %d and %d", firstFails, s1, s2)
			}
		})
	}
}

// TestMemoryModel proves the memory of delivered pops against a plain
// model under random deliveries and clock steps: a pop counts as seen
// exactly when it is among the last MaxPops remembered and within the
// window, and the memory never holds more than MaxPops.
func TestMemoryModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		window := time.Duration(rapid.IntRange(1, 50).Draw(t, "window"))
		limit := rapid.IntRange(1, 8).Draw(t, "limit")
		m := newMemory(window, limit)
		type entry struct {
			k  popKey
			at time.Time
		}
		var model []entry
		now := time.Unix(0, 0)
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			k := popKey{timer: rapid.Uint64Range(0, 2).Draw(t, "timer"), seq: rapid.Uint64Range(1, 4).Draw(t, "seq")}
			now = now.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "step")))
			want := false
			for i := len(model) - 1; i >= 0 && i >= len(model)-limit; i-- {
				if model[i].k == k {
					want = now.Sub(model[i].at) < window
					break
				}
			}
			if got := m.seen(k, now); got != want {
				t.Fatalf("seen(%+v) = %v, want %v; model %v", k, got, want, model)
			}
			if !want {
				m.remember(k, now)
				model = append(model, entry{k, now})
			}
			if m.len() > limit || len(m.last) > limit {
				t.Fatalf("memory holds %d entries, %d keys, limit %d", m.len(), len(m.last), limit)
			}
		}
	})
}
