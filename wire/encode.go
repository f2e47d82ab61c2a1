package wire

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The bodies this package writes (api.md) are appended by hand: every
// create encodes its replication body, and the reflective encoding/json
// took a third of a create's time in the node. The bytes are exactly what
// encoding/json wrote for the struct types codec_test.go keeps as the
// reference (TestEncodeMatchesReference): members in the same order, the
// members only an internal body carries omitted from a client body, and
// strings escaped as encoding/json escapes them (HTML characters, U+2028
// and U+2029 included, invalid UTF-8 as U+FFFD). version and definition
// are extensions: the client write that defined the timer, as a decimal
// string, and the definition's fingerprint.

// Encode returns the client API body of a create or update (POST
// /timers, PUT /timers/<id>) that Parse reads back as t. Interval and
// RepeatFor travel as whole seconds, truncated (Validate refuses a
// definition they would alter); ReplicationFactor 0 leaves the
// replication factor to the node.
func Encode(t Timer) []byte {
	b := make([]byte, 0, 128+len(t.URI)+len(t.Opaque))
	b = append(b, `{"timing":{"interval":`...)
	b = strconv.AppendInt(b, int64(t.Interval/time.Second), 10)
	b = append(b, `,"repeat-for":`...)
	b = strconv.AppendInt(b, int64(t.RepeatFor/time.Second), 10)
	b = append(b, `},"callback":{"http":`...)
	b = appendCallback(b, t.URI, t.Opaque)
	b = append(b, '}')
	if t.ReplicationFactor > 0 {
		b = append(b, `,"reliability":{"replication-factor":`...)
		b = strconv.AppendInt(b, int64(t.ReplicationFactor), 10)
		b = append(b, '}')
	}
	b = appendStatistics(b, t.Tags)
	return append(b, '}')
}

// AppendReplication appends to b the internal PUT body (api.md, "internal
// API") of definition t with the replication state r, which Parse reads
// back as t and r. A Timer with no URI travels as a tombstone: an empty
// callback. Definition, Missed and FirstTry are omitted when 0, Sites, Lacking and
// SitesLacking when empty;
// the replica list is always there (an empty one forwards the timer to
// another site), and t's replication factor, when not 0, travels in
// reliability after it.
func AppendReplication(b []byte, t *Timer, r *Replication) []byte {
	b = append(b, `{"timing":{"interval":`...)
	b = strconv.AppendInt(b, int64(t.Interval/time.Second), 10)
	b = append(b, `,"repeat-for":`...)
	b = strconv.AppendInt(b, int64(t.RepeatFor/time.Second), 10)
	b = append(b, `,"start-time-delta":`...)
	b = strconv.AppendInt(b, r.StartTimeDelta.Milliseconds(), 10)
	b = append(b, `,"sequence-number":`...)
	b = strconv.AppendUint(b, uint64(r.Seq), 10)
	b = append(b, `,"version":"`...)
	b = strconv.AppendUint(b, r.Version, 10)
	b = append(b, '"')
	if r.Definition != 0 {
		b = append(b, `,"definition":`...)
		b = strconv.AppendUint(b, uint64(r.Definition), 10)
	}
	if r.Missed != 0 {
		b = append(b, `,"missed":`...)
		b = strconv.AppendUint(b, uint64(r.Missed), 10)
	}
	if r.FirstTry != 0 {
		b = append(b, `,"first-try":"`...)
		b = strconv.AppendUint(b, r.FirstTry, 10)
		b = append(b, '"')
	}
	b = append(b, `},"callback":{`...)
	if t.URI != "" {
		b = append(b, `"http":`...)
		b = appendCallback(b, t.URI, t.Opaque)
	}
	b = append(b, `},"reliability":{"cluster-view-id":"`...)
	b = strconv.AppendUint(b, r.ViewID, 10)
	b = append(b, `","replicas":`...)
	b = AppendStrings(b, r.Replicas)
	if len(r.Sites) > 0 {
		b = append(b, `,"sites":`...)
		b = AppendStrings(b, r.Sites)
	}
	if len(r.Lacking) > 0 {
		b = append(b, `,"lacking":`...)
		b = AppendStrings(b, r.Lacking)
	}
	if len(r.SitesLacking) > 0 {
		b = append(b, `,"sites-lacking":`...)
		b = AppendStrings(b, r.SitesLacking)
	}
	if t.ReplicationFactor != 0 {
		b = append(b, `,"replication-factor":`...)
		b = strconv.AppendInt(b, int64(t.ReplicationFactor), 10)
	}
	b = append(b, '}')
	b = appendStatistics(b, t.Tags)
	return append(b, '}')
}

// appendCallback appends the http member's object.
func appendCallback(b []byte, uri, opaque string) []byte {
	b = append(b, `{"uri":`...)
	b = AppendString(b, uri)
	b = append(b, `,"opaque":`...)
	b = AppendString(b, opaque)
	return append(b, '}')
}

// appendStatistics appends the statistics member, if there are tags.
func appendStatistics(b []byte, tags []Tag) []byte {
	if len(tags) == 0 {
		return b
	}
	b = append(b, `,"statistics":{"tag-info":[`...)
	for i, tag := range tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = AppendString(b, tag.Type)
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(tag.Count), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// AppendStrings appends ss as a JSON array of strings, escaped as
// AppendString escapes each.
func AppendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it: quote, backslash and control characters, the HTML
// characters <, > and &, U+2028 and U+2029; invalid UTF-8 becomes U+FFFD.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
