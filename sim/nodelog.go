package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// nodeLog is a slog handler that prints the nodes' log records into a
// run's printed trace, each stamped with the virtual time it was written
// at instead of the wall clock's. It writes beside the trace, never into
// its hash: a run traced with the nodes' logs hashes as one without.
type nodeLog struct {
	w     io.Writer
	now   func() time.Duration
	level slog.Level
	attrs []slog.Attr
}

func (h *nodeLog) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *nodeLog) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	// A text handler with no time: the line's stamp is the virtual one.
	th := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: h.level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}).WithAttrs(h.attrs)
	if err := th.Handle(context.Background(), r); err != nil {
		return err
	}
	_, err := fmt.Fprintf(h.w, "%12v log        %s", h.now(), b.Bytes())
	return err
}

func (h *nodeLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

// WithGroup is not used by the node; a group's attributes print flat.
func (h *nodeLog) WithGroup(string) slog.Handler { return h }
