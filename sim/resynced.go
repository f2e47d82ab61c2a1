package sim

import (
	"context"
	"log/slog"
	"slices"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
)

// Each node's resync finishes at a moment of its own, which the operator
// sees only at its next look at the status (pollScale). G6 judges what a
// node holds at that moment (checker/resynced.go), so the simulator
// learns it as the node says so: the node logs "resync finished" as its
// resync ends (node/resync.go finishResync), and a handler on its logger
// records the finish with what the node holds live then. It reads the
// node's state and changes nothing, and the run's trace and hash are
// those of a run without it.

// resyncFinishedMsg is the message the node logs as a resync ends.
const resyncFinishedMsg = "resync finished"

// resyncWatch is a slog handler that calls done on the node's "resync
// finished" record and passes every record on to inner (nil: none).
type resyncWatch struct {
	inner slog.Handler
	done  func()
}

// nodeLogger is the logger the node on m is configured with: the run's
// (Options.Logger), watched for the end of each resync.
func (w *world) nodeLogger(m *machine, nd **node.Node) *slog.Logger {
	var inner slog.Handler
	if w.opts.Logger != nil {
		inner = w.opts.Logger.Handler()
	}
	return slog.New(&resyncWatch{inner: inner, done: func() {
		if *nd != nil {
			w.resyncFinished(m, *nd)
		}
	}})
}

func (h *resyncWatch) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.inner != nil && h.inner.Enabled(ctx, l)
}

func (h *resyncWatch) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == resyncFinishedMsg {
		h.done()
	}
	if h.inner != nil && h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h *resyncWatch) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	if h.inner != nil {
		c.inner = h.inner.WithAttrs(as)
	}
	return &c
}

func (h *resyncWatch) WithGroup(name string) slog.Handler {
	c := *h
	if h.inner != nil {
		c.inner = h.inner.WithGroup(name)
	}
	return &c
}

// resyncFinished records, when nd's resync finished complete to the view
// of the scale under way, the timers nd holds live (checker.Resynced).
// A resync that gave up on a peer, failed a send or refused a record
// promises nothing of what it took, and one of another view (a start-up
// resync outside a scale) is not the scale's.
func (w *world) resyncFinished(m *machine, nd *node.Node) {
	run := w.scaling
	if run == nil || nd != m.node || !slices.Contains(w.addrs(), m.addr) {
		return
	}
	st := nd.ResyncStatus()
	if st.Running || st.ViewID != run.view || len(st.Failed) > 0 || st.SendFailures > 0 || st.Refused > 0 {
		return
	}
	var live []uint64
	nd.Held(func(t *node.Timer) bool {
		if t.State == node.Live {
			live = append(live, t.ID)
		}
		return true
	})
	w.hist.Resyncs = append(w.hist.Resyncs, checker.Resynced{At: w.loop.Now(), Node: m.addr, Scale: run.idx, Live: live})
}
