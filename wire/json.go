package wire

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The walker below reads bodies CheckJSON (valid.go) accepted: it meets
// no syntax errors, so it only finds where each token ends, and decodes
// strings byte for byte.

// rawValue is one JSON value as the body holds it, nil when absent.
type rawValue []byte

// kind names v's JSON type for error reasons.
func (v rawValue) kind() string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func (v rawValue) isObject() bool { return v[0] == '{' }
func (v rawValue) isArray() bool  { return v[0] == '[' }
func (v rawValue) isString() bool { return v[0] == '"' }
func (v rawValue) isNumber() bool { return v[0] == '-' || '0' <= v[0] && v[0] <= '9' }

// unquote decodes a JSON string token byte for byte. Where encoding/json
// would put U+FFFD in place of invalid UTF-8 or of an escaped UTF-16
// surrogate without its pair, it refuses the string: opaque data must
// reach the callback as the client sent it, or not at all.
func unquote(v rawValue) (string, bool) {
	var b strings.Builder
	if !unquoteTo(&b, v) {
		return "", false
	}
	return b.String(), true
}

// unquoteTo appends the string token v decoded to b, as unquote decodes
// it, and reports whether it could. It grows b once, by the token's
// length, so that strings decoded in turn into one Builder share one
// allocation: each b.String() taken between them stays valid, since a
// Builder never rewrites what it holds.
func unquoteTo(b *strings.Builder, v rawValue) bool {
	s := v[1 : len(v)-1]
	if !utf8.Valid(s) { // escapes are ASCII: this checks every literal byte
		return false
	}
	b.Grow(len(s)) // the decoded string is no longer than its token
	for i := bytes.IndexByte(s, '\\'); i >= 0; i = bytes.IndexByte(s, '\\') {
		b.Write(s[:i])
		s = s[i:]
		if s[1] != 'u' {
			b.WriteByte(unescapeByte(s[1]))
			s = s[2:]
			continue
		}
		r, n := unescapeRune(s)
		if n == 0 {
			return false
		}
		b.WriteRune(r)
		s = s[n:]
	}
	b.Write(s)
	return true
}

// unescapeByte is the byte a two-character escape stands for.
func unescapeByte(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // '"', '\\' and '/' stand for themselves
}

// unescapeRune decodes the \uXXXX escape s starts with, or the surrogate
// pair of two such escapes, and returns the rune and the bytes it took; 0
// bytes for a surrogate without its pair.
func unescapeRune(s []byte) (rune, int) {
	r := hex4(s[2:6])
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if len(s) < 12 || s[6] != '\\' || s[7] != 'u' {
		return 0, 0
	}
	pair := utf16.DecodeRune(r, hex4(s[8:12]))
	if pair == utf8.RuneError {
		return 0, 0 // r is a low surrogate, or not followed by one
	}
	return pair, 12
}

// hex4 decodes four hex digits, which validJSON has checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// jsonIter walks the members of a JSON object, or the elements of a JSON
// array, within a body validJSON accepted: it meets no syntax errors, so
// it only needs to find where each token ends.
type jsonIter struct {
	b   []byte
	i   int
	obj bool
	key []byte   // the current member's name as written, quotes included
	val rawValue // the current member's value, or the current element
}

func members(v rawValue) jsonIter  { return jsonIter{b: v, i: 1, obj: true} }
func elements(v rawValue) jsonIter { return jsonIter{b: v, i: 1} }

func (it *jsonIter) next() bool {
	i := skipSpace(it.b, it.i)
	if it.b[i] == ',' {
		i = skipSpace(it.b, i+1)
	}
	if it.b[i] == '}' || it.b[i] == ']' {
		it.i = i
		return false
	}
	if it.obj {
		end := stringEnd(it.b, i)
		it.key = it.b[i:end]
		i = skipSpace(it.b, skipSpace(it.b, end)+1) // past the colon
	}
	end := valueEnd(it.b, i)
	it.val, it.i = it.b[i:end], end
	return true
}

// name is the current member's name with its escapes decoded, for exact
// comparison with the known keys. A name that does not decode comes back
// as written, quotes included, which matches no known key.
func (it *jsonIter) name() []byte {
	k := it.key[1 : len(it.key)-1]
	if bytes.IndexByte(k, '\\') < 0 {
		return k
	}
	if s, ok := unquote(it.key); ok {
		return []byte(s)
	}
	return it.key
}

// count is the number of elements of v, which must be a JSON array.
func count(v rawValue) int {
	n := 0
	for it := elements(v); it.next(); {
		n++
	}
	return n
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string token starting at i.
func stringEnd(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// valueEnd returns the index just past the value starting at i.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}
