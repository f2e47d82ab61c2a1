package sim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// FNV-64a parameters.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// tracer hashes every event and random draw of a run (FNV-64a over a
// canonical encoding) and, when w is set, prints each event as a line. Two
// runs of one plan on one binary must end with the same hash.
type tracer struct {
	h     uint64
	w     io.Writer
	now   func() time.Duration
	lines uint64
	// last keeps the latest events unformatted (a ring of lastEvents),
	// for the report of a run that stops in a livelock or a storm.
	last [lastEvents]traced
}

// lastEvents is how many of the latest events a tracer keeps.
const lastEvents = 32

// traced is one event as the tracer was given it.
type traced struct {
	at               time.Duration
	what, a, b, m, u string
	n                int64
}

func (t *tracer) keep(e traced) { t.last[t.lines%lastEvents] = e }

// recent formats the latest events kept, oldest first.
func (t *tracer) recent() string {
	var b strings.Builder
	for i := t.lines - min(t.lines, lastEvents); i < t.lines; i++ {
		e := t.last[i%lastEvents]
		fmt.Fprintf(&b, "%12v %-10s %-20s %-20s %s %s %d\n", e.at, e.what, e.a, e.b, e.m, e.u, e.n)
	}
	return b.String()
}

func newTracer(w io.Writer, now func() time.Duration) *tracer {
	return &tracer{h: fnvOffset, w: w, now: now}
}

// u64 and str hash in a local, stored once: the hash is most of what a
// run does per event beyond the nodes' own work.

func (t *tracer) u64(v uint64) {
	h := t.h
	for range 8 {
		h = (h ^ (v & 0xff)) * fnvPrime
		v >>= 8
	}
	t.h = h
}

func (t *tracer) str(s string) {
	h := t.h
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	t.h = h * fnvPrime // the terminating 0 byte
}

// event hashes one event: what happened, where, and a number.
func (t *tracer) event(what, a, b string, n int64) {
	t.u64(uint64(t.now()))
	t.str(what)
	t.str(a)
	t.str(b)
	t.u64(uint64(n))
	t.keep(traced{at: t.now(), what: what, a: a, b: b, n: n})
	t.lines++
	if t.w != nil {
		fmt.Fprintf(t.w, "%12v %-10s %-20s %-20s %d\n", t.now(), what, a, b, n)
	}
}

// request hashes one network event about a request.
func (t *tracer) request(what, from, to, method, url string, n int64) {
	t.u64(uint64(t.now()))
	t.str(what)
	t.str(from)
	t.str(to)
	t.str(method)
	t.str(url)
	t.u64(uint64(n))
	t.keep(traced{at: t.now(), what: what, a: from, b: to, m: method, u: url, n: n})
	t.lines++
	if t.w != nil {
		fmt.Fprintf(t.w, "%12v %-10s %-20s %-20s %s %s %d\n", t.now(), what, from, to, method, url, n)
	}
}

// note prints a free-form line and hashes it.
func (t *tracer) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	t.u64(uint64(t.now()))
	t.str(s)
	t.keep(traced{at: t.now(), what: "note", a: s})
	t.lines++
	if t.w != nil {
		fmt.Fprintf(t.w, "%12v %s\n", t.now(), s)
	}
}

// print prints a free-form line when the trace is printed, and hashes
// nothing: what only the printed trace shows (a body) must not change the
// hash, so that run and replay of one plan print the same one.
func (t *tracer) print(format string, args ...any) {
	if t.w != nil {
		fmt.Fprintf(t.w, "%12v %s\n", t.now(), fmt.Sprintf(format, args...))
	}
}

// Random streams split from one seed. Each is an independent PCG so that a
// change in how much one part draws never shifts another part's draws.
const (
	streamNetwork uint64 = iota + 1
	streamClocks
	streamWorkload
	streamFaults
	streamScale
	streamDisk
)

// stream returns the seed's PCG stream number id.
func stream(seed, id uint64) *rand.PCG {
	return rand.NewPCG(seed, 0x9e3779b97f4a7c15*id)
}

// hashedSource feeds every draw of a source into the trace hash.
type hashedSource struct {
	src rand.Source
	tr  *tracer
}

func (s hashedSource) Uint64() uint64 {
	v := s.src.Uint64()
	s.tr.u64(v)
	return v
}
