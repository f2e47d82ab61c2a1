package nemesis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// recorder is the run's history as it happens: every client operation
// and attempt, every delivery at the sink, every fault. Times are since
// the run began, on this process's monotonic clock, which the nodes
// share (one machine, one kernel clock).
type recorder struct {
	start time.Time

	mu       sync.Mutex
	h        checker.RealHistory
	nextSeq  int
	roundsAt []RoundTimes
}

// RoundTimes is when a round's fault began and healed, and when the
// round ended, since the run began.
type RoundTimes struct {
	Round
	From, Fault, Heal, To time.Duration
}

func newRecorder(members []string) *recorder {
	r := &recorder{start: time.Now()}
	r.h.Members = members
	// The nodes keep their timers on disk, in the run folder (cluster.go),
	// and the nemesis makes no disk fault: a kill -9 loses no copy a node
	// acknowledged, so the checker excuses none by it.
	r.h.Storage = true
	return r
}

// now is the time since the run began.
func (r *recorder) now() time.Duration { return time.Since(r.start) }

// invoke records the start of an operation and returns its Seq.
func (r *recorder) invoke(op checker.Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextSeq++
	op.Seq = r.nextSeq
	op.Invoke = r.now()
	r.h.Ops = append(r.h.Ops, op)
	return op.Seq
}

// complete records how operation seq ended.
func (r *recorder) complete(seq int, f func(op *checker.Op)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.h.Ops) - 1; i >= 0; i-- {
		if r.h.Ops[i].Seq == seq {
			f(&r.h.Ops[i])
			r.h.Ops[i].Return = r.now()
			return
		}
	}
	panic(fmt.Sprintf("nemesis: complete of op %d, which was never invoked", seq))
}

func (r *recorder) attempt(a checker.Attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Attempts = append(r.h.Attempts, a)
}

// lastAttempt is the last attempt of operation seq, if it made one.
func (r *recorder) lastAttempt(seq int) (checker.Attempt, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.h.Attempts) - 1; i >= 0; i-- {
		if r.h.Attempts[i].Op == seq {
			return r.h.Attempts[i], true
		}
	}
	return checker.Attempt{}, false
}

func (r *recorder) pop(p checker.Pop) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Pops = append(r.h.Pops, p)
}

// fault records f now.
func (r *recorder) fault(f checker.Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f.At = r.now()
	r.h.Faults = append(r.h.Faults, f)
}

func (r *recorder) round(t RoundTimes) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roundsAt = append(r.roundsAt, t)
}

// finish closes the history: the liveness phase began at liveFrom, and
// the run's observation ends now. maxNetDelay is the slack a healthy
// exchange may take on this machine.
func (r *recorder) finish(liveFrom, maxNetDelay time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.LivenessFrom = liveFrom
	r.h.MaxNetDelay = maxNetDelay
	r.h.End = r.now()
}

// Record is a finished run's history and rounds, as written to
// history.json so that `chronos-nemesis judge` can judge it again.
type Record struct {
	Seed    uint64
	Bounds  checker.RealBounds
	History checker.RealHistory
	Rounds  []RoundTimes
}

func (r *recorder) record(seed uint64, b checker.RealBounds) Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Record{Seed: seed, Bounds: b, History: r.h, Rounds: append([]RoundTimes(nil), r.roundsAt...)}
}

// Save writes the record as JSON to path.
func (rec Record) Save(path string) error {
	b, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// LoadRecord reads a record Save wrote.
func LoadRecord(path string) (Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Record{}, err
	}
	rec, err := ParseRecord(b)
	if err != nil {
		return rec, fmt.Errorf("nemesis: %s: %w", path, err)
	}
	return rec, nil
}

// maxRecordPops bounds the pops one definition of a record may ask for,
// so that judging a record read from a file is bounded too.
const maxRecordPops = 100_000

// ParseRecord reads a record from JSON and refuses one the checker
// could not judge: negative times or timings, a bound out of range, a
// definition of more than maxRecordPops pops.
func ParseRecord(b []byte) (Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, err
	}
	h := &rec.History
	if err := rec.Bounds.Validate(); err != nil {
		return rec, err
	}
	if h.End < 0 || h.MaxNetDelay < 0 || h.MaxClockSkew < 0 || h.LivenessFrom < 0 {
		return rec, errors.New("a negative end, delay, skew or liveness time")
	}
	for _, op := range h.Ops {
		sp := op.Spec
		if op.Invoke < 0 || op.Return < 0 || sp.Interval < 0 || sp.RepeatFor < 0 || sp.Pops() > maxRecordPops {
			return rec, fmt.Errorf("op %d: negative times, or timings of more than %d pops", op.Seq, maxRecordPops)
		}
	}
	for _, p := range h.Pops {
		if p.At < 0 {
			return rec, fmt.Errorf("a pop at %v", p.At)
		}
	}
	for _, f := range h.Faults {
		if f.At < 0 {
			return rec, fmt.Errorf("a fault at %v", f.At)
		}
	}
	return rec, nil
}
