package localcluster

import (
	"strings"
	"sync"
)

// maxLogBytes bounds what a Log keeps of a process's output: a node of
// `chronos cluster` may run for days. Past it the oldest half is dropped.
const maxLogBytes = 4 << 20

// Log keeps the latest output of a process, for a test to show when it
// fails or to wait for a line in, and tells waiters when it grows. It is
// safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{} // closed and replaced on every write
}

func newLog() *Log { return &Log{changed: make(chan struct{})} }

// Write appends b, dropping the oldest half of the log once it holds more
// than maxLogBytes.
func (l *Log) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(b)
	if l.buf.Len() > maxLogBytes {
		kept := l.buf.String()[l.buf.Len()-maxLogBytes/2:]
		l.buf.Reset()
		l.buf.WriteString("[earlier output dropped]\n")
		l.buf.WriteString(kept)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return len(b), nil
}

// String returns what the log holds.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// contains reports whether the log holds s, and returns the channel
// closed on its next write.
func (l *Log) contains(s string) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s), l.changed
}
