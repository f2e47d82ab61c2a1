package localcluster

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzPrefixed proves, for any output of a node cut into any writes, that
// every line printed starts with the node's prefix, ends with a newline,
// holds no newline of its own and no more than maxLineBytes, and that
// the lines without their prefixes and the newlines they were cut at give
// back the output.
func FuzzPrefixed(f *testing.F) {
	f.Add([]byte("time=1 msg=serving\ntime=2 msg=stopped\n"), uint8(7))
	f.Add([]byte("no newline at the end"), uint8(1))
	f.Add([]byte("\n\n\n"), uint8(0))
	f.Add(bytes.Repeat([]byte("x"), maxLineBytes+3), uint8(255))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		var out bytes.Buffer
		w := newLines(&out).writer("node1")
		step := int(cut) + 1
		for i := 0; i < len(data); i += step {
			chunk := data[i:min(i+step, len(data))]
			if n, err := w.Write(chunk); n != len(chunk) || err != nil {
				t.Fatalf("Write(%d bytes) = %d, %v", len(chunk), n, err)
			}
		}
		w.Flush()
		var back bytes.Buffer
		for _, line := range strings.SplitAfter(out.String(), "\n") {
			if line == "" {
				continue
			}
			body, ok := strings.CutPrefix(line, "node1 | ")
			if !ok || !strings.HasSuffix(body, "\n") || len(body)-1 > maxLineBytes || strings.Contains(body[:len(body)-1], "\n") {
				t.Fatalf("printed line %q: want the prefix, one newline at the end, at most %d bytes", line, maxLineBytes)
			}
			back.WriteString(body)
		}
		// Each printed line ends in a newline: the output's own, or one
		// added where a long line was cut or the output ended without one.
		got := back.Bytes()
		i := 0
		for _, c := range data {
			for i < len(got) && got[i] != c && got[i] == '\n' {
				i++ // a newline the writer added
			}
			if i >= len(got) || got[i] != c {
				t.Fatalf("the lines printed do not give back the output at byte %d", i)
			}
			i++
		}
		if rest := got[i:]; len(bytes.Trim(rest, "\n")) > 0 {
			t.Fatalf("the lines printed hold %q more than the output", rest)
		}
	})
}
