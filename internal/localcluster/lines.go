package localcluster

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// maxLineBytes bounds a line held back while its end has not come: a
// longer one is printed in pieces.
const maxLineBytes = 64 << 10

// lines is the cluster's output, shared by every node's log, the sink and
// the command's own messages: each writes whole lines under one lock, so
// that lines from different sources never mix.
type lines struct {
	mu  sync.Mutex
	out io.Writer
}

func newLines(out io.Writer) *lines {
	if out == nil {
		out = io.Discard
	}
	return &lines{out: out}
}

// printf writes one message of the command itself, and returns the
// output's error: a closed terminal's, say.
func (l *lines) printf(format string, args ...any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := fmt.Fprintf(l.out, format, args...)
	return err
}

// println prints one whole line of source, which holds no newline, after
// its prefix. It is safe for concurrent use, unlike a writer.
func (l *lines) println(source, line string) {
	(&prefixed{lines: l, prefix: prefix(source)}).emit([]byte(line + "\n"))
}

// writer returns a writer that prints each line written to it after
// source and a bar ("node1 | ..."). Flush prints a last line that has no
// newline.
func (l *lines) writer(source string) *prefixed {
	return &prefixed{lines: l, prefix: prefix(source)}
}

// prefix is what starts each line of source.
func prefix(source string) []byte { return []byte(fmt.Sprintf("%-5s | ", source)) }

// prefixed is one source's writer. Each is written by one goroutine at a
// time (exec copies a process's output from one), so its buffer needs no
// lock of its own.
type prefixed struct {
	lines  *lines
	prefix []byte
	buf    bytes.Buffer
	// scanned is how much of buf is known to hold no newline, so that a
	// long line written a little at a time is not searched again.
	scanned int
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for {
		data := p.buf.Bytes()
		i := bytes.IndexByte(data[p.scanned:], '\n')
		switch {
		case i >= 0:
			p.emit(data[:p.scanned+i+1])
			p.buf.Next(p.scanned + i + 1)
			p.scanned = 0
		case len(data) >= maxLineBytes:
			p.emit(append(data[:maxLineBytes:maxLineBytes], '\n'))
			p.buf.Next(maxLineBytes)
			p.scanned = 0
		default:
			p.scanned = len(data)
			return len(b), nil
		}
	}
}

// Flush prints what is left, a line without its newline.
func (p *prefixed) Flush() {
	if p.buf.Len() > 0 {
		p.emit(append(p.buf.Bytes(), '\n'))
		p.buf.Reset()
		p.scanned = 0
	}
}

// emit prints one line, which ends in a newline, after the prefix.
func (p *prefixed) emit(line []byte) {
	out := make([]byte, 0, len(p.prefix)+len(line))
	out = append(append(out, p.prefix...), line...)
	p.lines.mu.Lock()
	defer p.lines.mu.Unlock()
	_, _ = p.lines.out.Write(out)
}
