// Package chantest waits on channels in tests with a ceiling against
// hangs, so that a test that would hang fails instead.
package chantest

import (
	"testing"
	"time"
)

// Timeout is how long Receive waits before the test fails: a ceiling
// against hangs, never a measured timing.
const Timeout = 10 * time.Second

// Receive returns the next value on ch, or fails the test, naming what it
// waited for, if none arrives within Timeout.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Timeout):
		t.Fatalf("no %s within %v", what, Timeout)
		panic("unreachable")
	}
}
