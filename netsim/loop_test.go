package netsim

import (
	"strings"
	"testing"
	"time"
)

// TestLoopLimits proves a run that goes wrong stops at once with a clear
// message instead of taking the machine down: events that re-schedule
// themselves at the same instant (a livelock) stop at EventsPerInstant,
// events that each schedule two (a message storm) stop at Pending, while
// the same number of events spread over time runs to the end.
func TestLoopLimits(t *testing.T) {
	lim := Limits{EventsPerInstant: 1000, Pending: 1000}
	for _, c := range []struct {
		name string
		seed func(l *Loop)
		want string
	}{
		{"livelock", func(l *Loop) {
			var spin func()
			spin = func() { l.At(l.Now(), spin) }
			l.At(time.Second, spin)
		}, "with no virtual progress: livelock"},
		{"storm", func(l *Loop) {
			var storm func()
			storm = func() { l.After(time.Millisecond, storm); l.After(time.Millisecond, storm) }
			l.At(0, storm)
		}, "a message storm"},
		{"progress", func(l *Loop) {
			var tick func()
			tick = func() { l.After(time.Millisecond, tick) }
			l.At(0, tick)
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := &Loop{Limits: lim}
			c.seed(l)
			got := func() (msg string) {
				defer func() {
					if r := recover(); r != nil {
						msg = r.(string)
					}
				}()
				l.RunUntil(5 * time.Second) // 5,000 ticks of progress
				return ""
			}()
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("got panic %q, want one containing %q", got, c.want)
			}
		})
	}
}
