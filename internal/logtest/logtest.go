// Package logtest holds what tests need to read the logs of code that
// runs goroutines of its own.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log sink safe for concurrent writers: give it to
// slog.NewTextHandler, and read what was written with String.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
