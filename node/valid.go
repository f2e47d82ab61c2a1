package node

import "strings"

// validJSON reports whether b is one JSON value with optional white space
// around it: exactly what encoding/json.Valid reports, in about a third of
// its time (BenchmarkValidJSON). Every body a node takes is validated
// before the walker of codec.go reads it, so this is on the path of every
// create and of every message of a resync; FuzzValidJSON holds the two
// to each other, refusals and nesting bound included.
func validJSON(b []byte) bool {
	i, ok := skipJSONValue(b, skipJSONSpace(b, 0), 0)
	return ok && skipJSONSpace(b, i) == len(b)
}

// maxJSONDepth is encoding/json's bound on nested objects and arrays.
const maxJSONDepth = 10000

// skipJSONSpace returns the index of the first byte from i that is not
// JSON white space.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipJSONValue returns the index after the value at b[i], nested in
// depth containers, and whether it is one.
func skipJSONValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return skipJSONContainer(b, i+1, depth+1, '}')
	case c == '[':
		return skipJSONContainer(b, i+1, depth+1, ']')
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

// skipJSONContainer skips the members or elements of an object or array
// whose opening byte is before b[i], and its closing byte ('}' or ']').
func skipJSONContainer(b []byte, i, depth int, closing byte) (int, bool) {
	if depth > maxJSONDepth {
		return i, false
	}
	i = skipJSONSpace(b, i)
	if i < len(b) && b[i] == closing {
		return i + 1, true
	}
	for {
		var ok, closed bool
		if closing == '}' {
			if i, ok = skipJSONName(b, i); !ok {
				return i, false
			}
		}
		if i, ok = skipJSONValue(b, i, depth); !ok {
			return i, false
		}
		if i, closed, ok = skipJSONSeparator(b, i, closing); !ok || closed {
			return i, ok
		}
	}
}

// skipJSONName skips a member's name, its colon and the space after it.
func skipJSONName(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := skipJSONString(b, i+1)
	if !ok {
		return i, false
	}
	if i = skipJSONSpace(b, i); i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipJSONSpace(b, i+1), true
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
