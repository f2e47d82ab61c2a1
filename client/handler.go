package client

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Defaults of HandlerConfig.
const (
	// DefaultWindow is how long a handler remembers a delivered pop. A
	// duplicate comes from a later replica popping at its turn, 2 s per
	// rank (30 s at the largest replication factor), or from a pop that
	// waited in a node's queue, up to a minute; ten minutes covers those
	// with room for a node that was paused or cut off for a while.
	DefaultWindow = 10 * time.Minute
	// DefaultMaxPops bounds how many delivered pops a handler remembers:
	// about 100 bytes each, so 6.5 MB at most. Past it the oldest are
	// forgotten before their window ends.
	DefaultMaxPops = 1 << 16
	// DefaultMaxOpaqueBytes is the largest pop body a handler reads: a
	// node takes no timer body over 1 MiB, so no opaque data is larger.
	DefaultMaxOpaqueBytes = wire.MaxBodyBytes
)

// HandlerConfig tunes a Handler.
type HandlerConfig struct {
	// Window is how long a delivered pop is remembered.
	Window time.Duration
	// MaxPops bounds how many delivered pops are remembered.
	MaxPops int
	// MaxOpaqueBytes is the largest pop body read; a larger one is
	// refused with 413.
	MaxOpaqueBytes int64
	// OnDuplicate, if set, is called with each duplicate dropped.
	OnDuplicate func(Pop)
}

// DefaultHandlerConfig returns the defaults above.
func DefaultHandlerConfig() HandlerConfig {
	return HandlerConfig{Window: DefaultWindow, MaxPops: DefaultMaxPops, MaxOpaqueBytes: DefaultMaxOpaqueBytes}
}

// Validate names the first field out of range.
func (c HandlerConfig) Validate() error {
	switch {
	case c.Window <= 0:
		return fmt.Errorf("%w: Window %v is not positive", ErrInvalid, c.Window)
	case c.MaxPops <= 0:
		return fmt.Errorf("%w: MaxPops %d is not positive", ErrInvalid, c.MaxPops)
	case c.MaxOpaqueBytes <= 0:
		return fmt.Errorf("%w: MaxOpaqueBytes %d is not positive", ErrInvalid, c.MaxOpaqueBytes)
	}
	return nil
}

// Pop is one callback of a timer.
type Pop struct {
	// Timer is the timer's unique ID, 16 lower-case hex digits: the first
	// half of its ID (ID.Unique), from the X-Chronos-Timer header.
	Timer string
	// Seq is the pop's X-Sequence-Number: 1 for the first pop of a
	// definition, counting up; an update starts again from 1. Every
	// duplicate of a pop carries the same one.
	Seq uint64
	// Opaque is the body: the timer's opaque data.
	Opaque []byte
}

// Of reports whether p is a pop of timer id.
func (p Pop) Of(id ID) bool { return p.Timer == id.Unique() }

// PopFunc is the application's part of a pop. A nil error answers the pop
// 200 and remembers it, so that its duplicates are dropped; an error
// answers 500, remembers nothing, and leaves the pop to the timer's next
// replica, which makes it at its turn (2 s later per rank).
type PopFunc func(ctx context.Context, p Pop) error

// HandlerStats counts what a Handler did.
type HandlerStats struct {
	Delivered  uint64 // pops handed to the PopFunc that it took
	Failed     uint64 // pops the PopFunc returned an error for
	Duplicates uint64 // copies of a delivered pop, dropped and answered 200
	Refused    uint64 // malformed requests, answered 4xx
}

// Handler is the http.Handler of a timer's callback URI. It parses each
// pop, hands it to the application's PopFunc once, and drops its
// duplicates.
//
// A duplicate is a second copy of a pop (the same timer, sequence number
// and opaque data): a replica pops when the one before it in rank did not
// tell it of its pop in time, so one pop can arrive from two replicas.
// The handler remembers each pop delivered in the last Window, at most
// MaxPops of them, the oldest forgotten first, and answers a copy of one
// 200 without delivering it. A copy that arrives while the first is
// still being delivered waits for its outcome. It keeps the set of pops
// rather than each timer's highest sequence number because pops do not
// arrive in order: a pop whose callback failed on one replica is made by
// the next 2 s later, after later pops of a short interval, and a highest
// number would drop it. The bound is what costs: a copy arriving after
// Window, or after MaxPops other pops, is delivered again.
//
// An update starts the sequence numbers over. Its pops are told apart
// from the old definition's by their opaque data; an application that
// updates a timer without changing the opaque data, and sees its pops
// within Window of the old ones, calls Forget after the update.
type Handler struct {
	fn   PopFunc
	cfg  HandlerConfig
	seed maphash.Seed

	mu    sync.Mutex
	mem   *memory
	stats HandlerStats
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a Handler that hands pops to fn.
func NewHandler(cfg HandlerConfig, fn PopFunc) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: no PopFunc", ErrInvalid)
	}
	return &Handler{fn: fn, cfg: cfg, seed: maphash.MakeSeed(), mem: newMemory(cfg.Window, cfg.MaxPops)}, nil
}

// Stats returns the counts so far.
func (h *Handler) Stats() HandlerStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// Forget forgets the delivered pops of timer id, so that none of its next
// pops is taken for a duplicate: call it after updating a timer without
// changing its opaque data.
func (h *Handler) Forget(id ID) {
	u, err := wire.ParseID(id.Unique())
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mem.forgetTimer(u)
}

// ServeHTTP answers a pop: 200 once the PopFunc took it or when it is a
// duplicate, 500 when the PopFunc failed, 400, 405 or 413 with the reason
// (in the Reason header and the body) when the request is not a pop.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, status, why := h.read(w, r)
	if status != 0 {
		h.count(func(s *HandlerStats) { s.Refused++ })
		refuse(w, status, why)
		return
	}
	k := popKey{seq: p.Seq, opaque: maphash.Bytes(h.seed, p.Opaque)}
	k.timer, _ = strconv.ParseUint(p.Timer, 16, 64)
	dup, err := h.claim(r.Context(), k)
	switch {
	case err != nil:
		// The node gave up while another copy was being delivered.
		refuse(w, http.StatusServiceUnavailable, "another copy of this pop is being delivered")
		return
	case dup:
		h.count(func(s *HandlerStats) { s.Duplicates++ })
		if h.cfg.OnDuplicate != nil {
			h.cfg.OnDuplicate(p)
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := h.deliver(r.Context(), k, p); err != nil {
		refuse(w, http.StatusInternalServerError, "pop not taken: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
}

// claim waits until no other copy of k is being delivered; then it
// reports whether k was delivered already, and if not marks it as being
// delivered by the caller.
func (h *Handler) claim(ctx context.Context, k popKey) (dup bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if h.mem.seen(k, time.Now()) {
			return true, nil
		}
		wait, ok := h.mem.claim(k)
		if ok {
			return false, nil
		}
		h.mu.Unlock()
		err := waitFor(ctx, wait)
		h.mu.Lock()
		if err != nil {
			return false, err
		}
	}
}

// deliver hands p to the PopFunc and releases k: remembered if the
// PopFunc took it, forgotten if it failed or panicked.
func (h *Handler) deliver(ctx context.Context, k popKey, p Pop) (err error) {
	taken := false
	defer func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.mem.release(k, taken, time.Now())
		if taken {
			h.stats.Delivered++
		} else {
			h.stats.Failed++
		}
	}()
	if err := h.fn(ctx, p); err != nil {
		return err
	}
	taken = true
	return nil
}

func (h *Handler) count(f func(*HandlerStats)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.stats)
}

// read reads the pop in r. A non-zero status refuses it with the reason.
func (h *Handler) read(w http.ResponseWriter, r *http.Request) (Pop, int, string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return Pop{}, http.StatusMethodNotAllowed, "method not allowed; allowed: POST"
	}
	tooBig := fmt.Sprintf("pop body larger than %d bytes", h.cfg.MaxOpaqueBytes)
	if r.ContentLength > h.cfg.MaxOpaqueBytes {
		return Pop{}, http.StatusRequestEntityTooLarge, tooBig
	}
	for _, name := range []string{wire.HeaderTimerID, wire.HeaderSequenceNumber} {
		if len(r.Header.Values(name)) > 1 {
			return Pop{}, http.StatusBadRequest, name + " is repeated"
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxOpaqueBytes))
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return Pop{}, http.StatusRequestEntityTooLarge, tooBig
		}
		return Pop{}, http.StatusBadRequest, "cannot read the pop body"
	}
	p, err := parsePop(r.Header.Get(wire.HeaderTimerID), r.Header.Get(wire.HeaderSequenceNumber), body)
	if err != nil {
		return Pop{}, http.StatusBadRequest, err.Error()
	}
	return p, 0, ""
}

// maxQuoted bounds how much of a malformed header a reason repeats.
const maxQuoted = 40

// parsePop reads a pop from its X-Chronos-Timer and X-Sequence-Number
// headers and its body.
func parsePop(timer, seq string, body []byte) (Pop, error) {
	if timer == "" {
		return Pop{}, errors.New(wire.HeaderTimerID + " is missing: a pop names its timer, so that its duplicates can be told")
	}
	if _, err := wire.ParseID(timer); err != nil {
		return Pop{}, fmt.Errorf("%s %s is not 16 hex digits", wire.HeaderTimerID, quote(timer))
	}
	if seq == "" {
		return Pop{}, errors.New(wire.HeaderSequenceNumber + " is missing")
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || n == 0 {
		return Pop{}, fmt.Errorf("%s %s is not a decimal number from 1", wire.HeaderSequenceNumber, quote(seq))
	}
	return Pop{Timer: strings.ToLower(timer), Seq: n, Opaque: body}, nil
}

func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}

// refuse answers status with the reason in the Reason header and as the
// plain-text body, as a node does.
func refuse(w http.ResponseWriter, status int, reason string) {
	reason = strings.ToValidUTF8(reason, "?")
	w.Header().Set(wire.HeaderReason, headerSafe(reason))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, reason)
}

// headerSafe replaces the control characters a header value cannot hold.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
