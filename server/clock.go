package server

import (
	"time"

	"github.com/benbjohnson/clock"

	"github.com/chronos-timer/chronos/node"
)

// Compile-time checks: the adapter's clock and its alarms fit the node.
var (
	_ node.Clock = (*Clock)(nil)
	_ node.Alarm = (*clock.Timer)(nil)
)

// Clock is the node's clock in production: wall time and alarms from a
// clock.Clock, with every alarm delivered through the node's Serial.
type Clock struct {
	clock  clock.Clock
	serial *Serial
}

// NewClock returns a Clock reading c and delivering alarms through s. A nil
// c means the real clock (clock.New()); an embedder may inject any
// clock.Clock instead.
func NewClock(c clock.Clock, s *Serial) *Clock {
	if c == nil {
		c = clock.New()
	}
	return &Clock{clock: c, serial: s}
}

// Now returns the wall time. The node calls it under the lock already, so it
// takes none.
func (c *Clock) Now() time.Time { return c.clock.Now() }

// AfterFunc calls f through the Serial once d has passed. Alarms that fire
// after shutdown are dropped by the Serial.
func (c *Clock) AfterFunc(d time.Duration, f func()) node.Alarm {
	return c.clock.AfterFunc(d, func() { c.serial.Do(f) })
}
