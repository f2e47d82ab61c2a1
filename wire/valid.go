package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// validJSON reports whether b is one JSON value with optional white space
// around it: exactly what encoding/json.Valid reports, in about a third of
// its time (BenchmarkValidJSON). FuzzValidJSON holds the two to each
// other, refusals and nesting bound included.
func validJSON(b []byte) bool {
	s := jsonScanner{b: b}
	return s.valid()
}

// CheckJSON checks body, which a node is about to read, is one JSON value
// in which no object names a member twice: encoding/json, and so most
// clients' parsers, would silently keep the last value of a repeated
// member, and the original's parser its first, so a body that repeats one
// means two things at once. It returns a *BadRequestError naming the
// repeated member, ErrNotJSON when the body is not JSON at all, or nil.
// Names are compared decoded ("a" and "\u0061" are one name), as
// encoding/json compares them. FuzzStrictJSON holds it to a reference
// built on encoding/json's tokenizer.
func CheckJSON(body []byte) error {
	s := jsonScanner{b: body, dups: true}
	if !s.valid() {
		return ErrNotJSON
	}
	if s.dup != nil {
		return badf("the body names the member %.100q twice in one object", s.dup)
	}
	return nil
}

// ErrNotJSON is CheckJSON's answer to a body that is not one JSON value.
var ErrNotJSON = errors.New("wire: not one JSON value")

// maxJSONDepth is encoding/json's bound on nested objects and arrays.
const maxJSONDepth = 10000

// maxNamesScanned is how many member names of one object are compared
// one by one; an object with more gets a set, so that a body of a
// hundred thousand names costs linear time, not quadratic.
const maxNamesScanned = 16

// jsonScanner walks a JSON document once, checking its syntax and, when
// dups is set, the member names of each object.
type jsonScanner struct {
	b    []byte
	dups bool
	// dup is the first repeated member name found (decoded).
	dup []byte
	// names holds the decoded member names of the objects being walked,
	// innermost last: each object's names from where it started.
	names nameStack
}

// nameStack is a stack of member names. The first ones sit in the
// scanner itself, enough for the bodies a node writes, so that a check
// allocates nothing for them: a slice grown through the scanner's
// pointer would be moved to the heap, one allocation a body.
type nameStack struct {
	fixed [32][]byte
	more  [][]byte
	n     int
}

func (st *nameStack) push(name []byte) {
	if st.n < len(st.fixed) {
		st.fixed[st.n] = name
	} else {
		st.more = append(st.more, name)
	}
	st.n++
}

func (st *nameStack) at(i int) []byte {
	if i < len(st.fixed) {
		return st.fixed[i]
	}
	return st.more[i-len(st.fixed)]
}

// truncate pops the names from the n-th on.
func (st *nameStack) truncate(n int) {
	st.n = n
	st.more = st.more[:max(n-len(st.fixed), 0)]
}

func (s *jsonScanner) valid() bool {
	i, ok := s.value(skipJSONSpace(s.b, 0), 0)
	return ok && skipJSONSpace(s.b, i) == len(s.b)
}

// skipJSONSpace returns the index of the first byte from i that is not
// JSON white space.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// value returns the index after the value at b[i], nested in depth
// containers, and whether it is one.
func (s *jsonScanner) value(i, depth int) (int, bool) {
	b := s.b
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return s.container(i+1, depth+1, '}')
	case c == '[':
		return s.container(i+1, depth+1, ']')
	case c == '"':
		return skipJSONString(b, i+1)
	case c == '-' || '0' <= c && c <= '9':
		return skipJSONNumber(b, i)
	case c == 't':
		return skipJSONLiteral(b, i, "true")
	case c == 'f':
		return skipJSONLiteral(b, i, "false")
	case c == 'n':
		return skipJSONLiteral(b, i, "null")
	}
	return i, false
}

// container skips the members or elements of an object or array whose
// opening byte is before b[i], and its closing byte ('}' or ']').
func (s *jsonScanner) container(i, depth int, closing byte) (int, bool) {
	if depth > maxJSONDepth {
		return i, false
	}
	i = skipJSONSpace(s.b, i)
	if i < len(s.b) && s.b[i] == closing {
		return i + 1, true
	}
	first := s.names.n
	i, ok := s.items(i, depth, closing, first)
	s.names.truncate(first)
	return i, ok
}

// items skips the members or elements of a container that has some; an
// object's names go in s.names from first.
func (s *jsonScanner) items(i, depth int, closing byte, first int) (int, bool) {
	var seen map[string]bool
	for {
		var ok, closed bool
		if closing == '}' {
			start, end := i, 0
			if i, end, ok = s.name(i); !ok {
				return i, false
			}
			if s.dups && s.dup == nil {
				seen = s.member(s.b[start:end], first, seen)
			}
		}
		if i, ok = s.value(i, depth); !ok {
			return i, false
		}
		if i, closed, ok = skipJSONSeparator(s.b, i, closing); !ok || closed {
			return i, ok
		}
	}
}

// member notes the name (quoted, as written) of a member of the object
// whose names start at first, and records it as the repeat if the object
// already had it. Past maxNamesScanned names the object's names go in
// seen, which it returns.
func (s *jsonScanner) member(quoted []byte, first int, seen map[string]bool) map[string]bool {
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
		// Decoded as encoding/json decodes it, invalid UTF-8 and unpaired
		// surrogates as U+FFFD, so that names it takes for one are one.
		var u string
		_ = json.Unmarshal(quoted, &u) // valid: the walk checked it
		name = []byte(u)
	}
	switch {
	case seen != nil:
		if seen[string(name)] {
			s.dup = name
		}
		seen[string(name)] = true
		return seen
	case s.names.n-first >= maxNamesScanned:
		seen = make(map[string]bool, 2*maxNamesScanned)
		for k := first; k < s.names.n; k++ {
			seen[string(s.names.at(k))] = true
		}
		return s.member(quoted, first, seen)
	}
	for k := first; k < s.names.n; k++ {
		if bytes.Equal(s.names.at(k), name) {
			s.dup = name
			return nil
		}
	}
	s.names.push(name)
	return nil
}

// name skips a member's name, its colon and the space after it, and
// returns where the name's string ends too.
func (s *jsonScanner) name(i int) (next, end int, ok bool) {
	b := s.b
	if i >= len(b) || b[i] != '"' {
		return i, 0, false
	}
	if end, ok = skipJSONString(b, i+1); !ok {
		return end, 0, false
	}
	if i = skipJSONSpace(b, end); i >= len(b) || b[i] != ':' {
		return i, 0, false
	}
	return skipJSONSpace(b, i+1), end, true
}

// skipJSONSeparator skips what follows a member or element: a comma and
// the space after it, or the container's closing byte (closed).
func skipJSONSeparator(b []byte, i int, closing byte) (next int, closed, ok bool) {
	i = skipJSONSpace(b, i)
	switch {
	case i >= len(b):
		return i, false, false
	case b[i] == ',':
		return skipJSONSpace(b, i+1), false, true
	case b[i] == closing:
		return i + 1, true, true
	}
	return i, false, false
}

// skipJSONString skips the rest of a string whose opening quote is before
// b[i]. As encoding/json, it refuses control characters and unknown
// escapes, and takes any other byte, invalid UTF-8 included (the walker
// refuses that where it reads a string).
func skipJSONString(b []byte, i int) (int, bool) {
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c != '\\':
			i++
		case i+1 >= len(b):
			return i, false
		case strings.IndexByte(`"\/bfnrt`, b[i+1]) >= 0:
			i += 2
		case b[i+1] == 'u' && i+6 <= len(b) && isHexDigit(b[i+2]) && isHexDigit(b[i+3]) && isHexDigit(b[i+4]) && isHexDigit(b[i+5]):
			i += 6
		default:
			return i, false
		}
	}
	return i, false
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// skipJSONNumber skips the number at b[i]: an optional minus, an integer
// without leading zeros, then an optional fraction and exponent.
func skipJSONNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// skipJSONLiteral skips lit (true, false or null) at b[i].
func skipJSONLiteral(b []byte, i int, lit string) (int, bool) {
	if end := i + len(lit); end <= len(b) && string(b[i:end]) == lit {
		return end, true
	}
	return i, false
}
