package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Body parsing is strict where encoding/json is lenient, as the original
// parser (exact member lookups) was: keys match exactly, case included, and
// every known member must have its JSON type (null is the wrong type for
// all of them, as the original's type assertions had it). Unknown keys are
// ignored, as there, so that newer senders may add members; a key repeated
// anywhere in a body is refused with 400 naming it (CheckJSON), where
// encoding/json would keep its last value and the original its first.
//
// CheckJSON (valid.go, held to encoding/json by differential fuzz
// targets) checks the syntax and the names in one pass; a small walker over the
// validated bytes then picks out the known members by exact name and keeps
// each value as its raw bytes until its field is validated. Every create
// parses a body, and this costs about a third of the reflective decode it
// replaced (BenchmarkParseBody); decoding each level into
// map[string]json.RawMessage instead, the obvious exact-key approach,
// measured twice the old cost before any validation.

// rawBody holds the raw value of each known member of a client or
// internal body, nil where absent, by its place in the body. The callback
// and statistics sections are walked where they are validated.
type rawBody struct {
	Interval       rawValue // timing
	RepeatFor      rawValue // timing
	StartTimeDelta rawValue // timing, internal
	SequenceNumber rawValue // timing, internal
	Version        rawValue // timing, internal
	Definition     rawValue // timing, internal
	Missed         rawValue // timing, internal
	FirstTry       rawValue // timing, internal
	Callback       rawValue
	// ReplicationFactor and the rest are members of reliability.
	ReplicationFactor rawValue
	ClusterViewID     rawValue // internal
	Replicas          rawValue // internal: its presence makes a body internal
	Sites             rawValue // internal
	Lacking           rawValue // internal
	SitesLacking      rawValue // internal
	Statistics        rawValue
}

// decodeWire checks body is a JSON object that names no member twice and
// picks out its known members.
func decodeWire(body []byte) (rawBody, error) {
	switch err := CheckJSON(body); {
	case err == ErrNotJSON:
		return rawBody{}, syntaxError(body)
	case err != nil:
		return rawBody{}, err
	}
	return decodeValid(body)
}

// decodeValid is decodeWire for a body already known to be valid JSON
// (a value inside a document validated as a whole).
func decodeValid(body []byte) (rawBody, error) {
	var w rawBody
	top := rawValue(bytes.TrimSpace(body))
	if !top.isObject() {
		return w, typeErr("the body", "a JSON object", top)
	}
	var timing, reliability rawValue
	for it := members(top); it.next(); {
		switch string(it.name()) {
		case "timing":
			timing = it.val
		case "callback":
			w.Callback = it.val
		case "reliability":
			reliability = it.val
		case "statistics":
			w.Statistics = it.val
		}
	}
	if timing == nil {
		return w, badf("timing is missing")
	}
	if err := w.decodeTiming(timing); err != nil {
		return w, err
	}
	if reliability != nil {
		if err := w.decodeReliability(reliability); err != nil {
			return w, err
		}
	}
	return w, nil
}

func (t *rawBody) decodeTiming(v rawValue) error {
	if !v.isObject() {
		return typeErr("timing", "a JSON object", v)
	}
	for it := members(v); it.next(); {
		switch string(it.name()) {
		case "interval":
			t.Interval = it.val
		case "repeat-for":
			t.RepeatFor = it.val
		case "start-time-delta":
			t.StartTimeDelta = it.val
		case "sequence-number":
			t.SequenceNumber = it.val
		case "version":
			t.Version = it.val
		case "definition":
			t.Definition = it.val
		case "missed":
			t.Missed = it.val
		case "first-try":
			t.FirstTry = it.val
		}
	}
	return nil
}

func (r *rawBody) decodeReliability(v rawValue) error {
	if !v.isObject() {
		return typeErr("reliability", "a JSON object", v)
	}
	for it := members(v); it.next(); {
		switch string(it.name()) {
		case "replication-factor":
			r.ReplicationFactor = it.val
		case "cluster-view-id":
			r.ClusterViewID = it.val
		case "replicas":
			r.Replicas = it.val
		case "sites":
			r.Sites = it.val
		case "lacking":
			r.Lacking = it.val
		case "sites-lacking":
			r.SitesLacking = it.val
		}
	}
	return nil
}

// syntaxError explains why body, which CheckJSON refused, is not one JSON
// value. It runs only on that error path, so it may decode again.
func syntaxError(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badf("body is not a valid JSON timer: the body is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var first json.RawMessage
	err := dec.Decode(&first)
	var syntax *json.SyntaxError
	switch {
	case err == nil:
		return badf("body has data after the JSON value")
	case errors.As(err, &syntax):
		return badf("body is not a valid JSON timer: %s (at byte %d)", syntax, syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badf("body is not a valid JSON timer: it ends inside a value")
	}
	return badf("body is not a valid JSON timer")
}

// BadRequestError is a client error: the reason goes to the client in the
// Reason header and the body of a 400.
type BadRequestError struct{ Reason string }

func (e *BadRequestError) Error() string { return "wire: bad request: " + e.Reason }

func badf(format string, args ...any) error {
	return &BadRequestError{Reason: fmt.Sprintf(format, args...)}
}

// typeErr reports a member of the wrong JSON type: the field, the JSON
// type it must have and the one it has.
func typeErr(field, want string, v rawValue) error {
	return badf("%s must be %s, got %s", field, want, v.kind())
}

// utf8Err refuses a string that would not arrive byte for byte.
func utf8Err(field string) error {
	return badf("%s is not valid UTF-8 (or holds an unpaired surrogate escape)", field)
}

// Parse parses and validates a client or internal timer body. repl is nil
// for a client body (no "replicas" in "reliability"). An absent or 0
// repeat-for reads as Interval (see the package doc); an internal body
// with an empty callback, a tombstone, reads as a Timer with no URI.
func Parse(body []byte) (t Timer, repl *Replication, err error) {
	w, err := decodeWire(body)
	if err != nil {
		return Timer{}, nil, err
	}
	return parseRaw(&w)
}

// ParseValid is Parse for a body already known to be valid JSON: a value
// inside a document CheckJSON accepted as a whole (a resync page's entry).
func ParseValid(body []byte) (t Timer, repl *Replication, err error) {
	w, err := decodeValid(body)
	if err != nil {
		return Timer{}, nil, err
	}
	return parseRaw(&w)
}

func parseRaw(w *rawBody) (t Timer, repl *Replication, err error) {
	internal := w.Replicas != nil
	if t, err = parseTimer(w, internal); err != nil {
		return Timer{}, nil, err
	}
	if internal {
		if repl, err = parseReplication(w); err != nil {
			return Timer{}, nil, err
		}
	}
	return t, repl, nil
}

func parseTimer(w *rawBody, internal bool) (Timer, error) {
	var t Timer
	if w.Interval == nil {
		return t, badf("timing.interval is missing")
	}
	interval, err := intField(w.Interval, "timing.interval", 0, MaxTimingSeconds)
	if err != nil {
		return t, err
	}
	repeatFor := interval
	if w.RepeatFor != nil {
		r, err := intField(w.RepeatFor, "timing.repeat-for", 0, MaxTimingSeconds)
		if err != nil {
			return t, err
		}
		if interval == 0 && r != 0 {
			return t, badf("timing.repeat-for must be absent or 0 when timing.interval is 0")
		}
		if r != 0 {
			repeatFor = r
		}
	}
	t.Interval, t.RepeatFor = time.Duration(interval)*time.Second, time.Duration(repeatFor)*time.Second
	if err := parseCallback(w.Callback, internal, &t); err != nil {
		return t, err
	}
	if w.ReplicationFactor != nil {
		rf, err := intField(w.ReplicationFactor, "reliability.replication-factor", 1, MaxReplicationFactor)
		if err != nil {
			return t, err
		}
		t.ReplicationFactor = int(rf)
	}
	tags, err := parseTags(w.Statistics)
	if err != nil {
		return t, err
	}
	t.Tags = tags
	return t, nil
}

// parseCallback accepts exactly one "http" callback. An internal body with
// an empty callback is a tombstone (api.md), which leaves t.URI empty.
func parseCallback(cb rawValue, internal bool, t *Timer) error {
	if cb == nil {
		if internal {
			return nil
		}
		return badf("callback is missing")
	}
	if !cb.isObject() {
		return typeErr("callback", "a JSON object", cb)
	}
	var http rawValue
	others := false
	for it := members(cb); it.next(); {
		if string(it.name()) == "http" {
			http = it.val
		} else {
			others = true
		}
	}
	if internal && http == nil && !others {
		return nil
	}
	if http == nil || others {
		return badf("callback must have exactly one mechanism, \"http\"")
	}
	return parseHTTP(http, t)
}

func parseHTTP(v rawValue, t *Timer) error {
	if !v.isObject() {
		return typeErr("callback.http", "a JSON object", v)
	}
	var uri, opaque rawValue
	for it := members(v); it.next(); {
		switch string(it.name()) {
		case "uri":
			uri = it.val
		case "opaque":
			opaque = it.val
		}
	}
	if uri == nil {
		return badf("callback.http.uri is missing")
	}
	// The URI and the opaque data are decoded into one Builder grown for
	// both at once: one allocation for the two.
	var b strings.Builder
	b.Grow(len(uri) + len(opaque))
	if err := stringFieldTo(&b, uri, "callback.http.uri"); err != nil {
		return err
	}
	u := b.String()
	if u == "" {
		return badf("callback.http.uri is missing")
	}
	if err := checkURI(u); err != nil {
		return err
	}
	t.URI = u
	if opaque != nil {
		if err := stringFieldTo(&b, opaque, "callback.http.opaque"); err != nil {
			return err
		}
		t.Opaque = b.String()[len(u):]
	}
	return nil
}

// checkURI accepts an absolute http or https URL with a host, and a port
// if any that a callback can be sent to: url.Parse checks that a port is
// decimal digits, but takes 0 and any number above 65535 too. An empty
// port ("http://h:/") is the scheme's, as RFC 3986 has it.
func checkURI(uri string) error {
	if plainURI(uri) {
		return nil // what url.Parse accepts, without its allocation
	}
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return badf("callback.http.uri %q is not an absolute http or https URL", uri)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return badf("callback.http.uri %q has port %q, which is not 1 to 65535", uri, port)
		}
	}
	return nil
}

// plainURI reports whether uri is a callback URL of the plain form almost
// every client sends, which checkURI accepts: "http" or "https", "://",
// a host of lower-case letters, digits, dots and hyphens, an optional
// port of 1 to 65535 without leading zeros, and an optional path and
// query of unreserved characters, '/', '=' and '&'. Anything else (upper
// case, escapes, user info, IPv6 literals, fragments) is left to
// url.Parse. A create parses its callback once; url.Parse allocated the
// URL it returns. TestPlainURIAgreesWithURLParse holds the two together.
func plainURI(uri string) bool {
	rest, ok := strings.CutPrefix(uri, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(uri, "https://"); !ok {
			return false
		}
	}
	i := 0
	for i < len(rest) && (isLowerAlnum(rest[i]) || rest[i] == '.' || rest[i] == '-') {
		i++
	}
	if i == 0 {
		return false
	}
	if i < len(rest) && rest[i] == ':' {
		j, port := i+1, 0
		for j < len(rest) && '0' <= rest[j] && rest[j] <= '9' && j-i <= 5 {
			port = port*10 + int(rest[j]-'0')
			j++
		}
		if j == i+1 || rest[i+1] == '0' || port > 65535 {
			return false
		}
		i = j
	}
	if i < len(rest) && rest[i] != '/' && rest[i] != '?' {
		return false
	}
	for ; i < len(rest); i++ {
		c := rest[i]
		if !isLowerAlnum(c) && !('A' <= c && c <= 'Z') && !strings.ContainsRune("-._~/?=&", rune(c)) {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func parseTags(st rawValue) ([]Tag, error) {
	if st == nil {
		return nil, nil
	}
	if !st.isObject() {
		return nil, typeErr("statistics", "a JSON object", st)
	}
	var info rawValue
	for it := members(st); it.next(); {
		if string(it.name()) == "tag-info" {
			info = it.val
		}
	}
	if info == nil {
		return nil, nil
	}
	if !info.isArray() {
		return nil, typeErr("statistics.tag-info", "an array", info)
	}
	n := count(info)
	if n == 0 {
		return nil, nil
	}
	if n > MaxTags {
		return nil, badf("statistics.tag-info has %d tags, more than %d", n, MaxTags)
	}
	tags := make([]Tag, 0, n)
	for it := elements(info); it.next(); {
		tag, err := parseTag(it.val, len(tags))
		if err != nil {
			return nil, err
		}
		tags = append(tags, tag)
	}
	return tags, nil
}

// parseTag validates the i-th tag. Its field names are built only for an
// error reason, so that valid tags cost no formatting.
func parseTag(v rawValue, i int) (Tag, error) {
	name := func(member string) string { return fmt.Sprintf("statistics.tag-info[%d]%s", i, member) }
	if !v.isObject() {
		return Tag{}, typeErr(name(""), "a JSON object", v)
	}
	var typ, count rawValue
	for it := members(v); it.next(); {
		switch string(it.name()) {
		case "type":
			typ = it.val
		case "count":
			count = it.val
		}
	}
	if typ == nil {
		return Tag{}, badf("%s is missing", name(".type"))
	}
	if !typ.isString() {
		return Tag{}, typeErr(name(".type"), "a string", typ)
	}
	t, ok := unquote(typ)
	if !ok {
		return Tag{}, utf8Err(name(".type"))
	}
	if t == "" {
		return Tag{}, badf("%s is missing", name(".type"))
	}
	c := int64(1)
	if count != nil {
		if !count.isNumber() {
			return Tag{}, typeErr(name(".count"), "an integer", count)
		}
		var problem string
		if c, problem = intValue(count, 1, 1<<31-1); problem != "" {
			return Tag{}, badf("%s %s", name(".count"), problem)
		}
	}
	return Tag{Type: t, Count: int(c)}, nil
}

// maxSitesLacking bounds reliability.sites-lacking: a node marks the
// sites by position in a 32-bit mask.
const maxSitesLacking = 32

// parseReplication validates the internal members. To add one, give it a
// field in rawBody, a case in decodeTiming or decodeReliability, and a
// check here.
func parseReplication(w *rawBody) (*Replication, error) {
	r := &Replication{}
	var err error
	if r.Replicas, err = stringList(w.Replicas, "reliability.replicas"); err != nil {
		return nil, err
	}
	if r.Sites, err = stringList(w.Sites, "reliability.sites"); err != nil {
		return nil, err
	}
	// An empty replica list with sites is a timer forwarded from another
	// site: the receiving node places it on its own cluster.
	if len(r.Replicas) == 0 && len(r.Sites) == 0 || len(r.Replicas) > MaxReplicationFactor {
		return nil, badf("reliability.replicas must list 1 to %d nodes", MaxReplicationFactor)
	}
	if r.Lacking, err = stringList(w.Lacking, "reliability.lacking"); err != nil {
		return nil, err
	}
	if len(r.Lacking) > MaxReplicationFactor {
		return nil, badf("reliability.lacking must list at most %d nodes", MaxReplicationFactor)
	}
	if r.SitesLacking, err = stringList(w.SitesLacking, "reliability.sites-lacking"); err != nil {
		return nil, err
	}
	if len(r.SitesLacking) > maxSitesLacking {
		return nil, badf("reliability.sites-lacking must list at most %d sites", maxSitesLacking)
	}
	if w.StartTimeDelta != nil {
		delta, err := intField(w.StartTimeDelta, "timing.start-time-delta", -MaxTimingSeconds*1000, MaxTimingSeconds*1000)
		if err != nil {
			return nil, err
		}
		r.StartTimeDelta = time.Duration(delta) * time.Millisecond
	}
	if w.SequenceNumber != nil {
		seq, err := intField(w.SequenceNumber, "timing.sequence-number", 0, 1<<31-1)
		if err != nil {
			return nil, err
		}
		r.Seq = uint32(seq)
	}
	if w.Version != nil {
		if r.Version, err = uintField(w.Version, "timing.version"); err != nil {
			return nil, err
		}
	}
	if w.FirstTry != nil {
		if r.FirstTry, err = uintField(w.FirstTry, "timing.first-try"); err != nil {
			return nil, err
		}
	}
	if w.Definition != nil {
		def, err := intField(w.Definition, "timing.definition", 0, 1<<32-1)
		if err != nil {
			return nil, err
		}
		r.Definition = uint32(def)
	}
	if w.Missed != nil {
		missed, err := intField(w.Missed, "timing.missed", 0, 1<<32-1)
		if err != nil {
			return nil, err
		}
		r.Missed = uint32(missed)
	}
	if w.ClusterViewID != nil {
		if r.ViewID, err = uintField(w.ClusterViewID, "reliability.cluster-view-id"); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// stringField decodes a JSON string member.
func stringField(v rawValue, field string) (string, error) {
	if !v.isString() {
		return "", typeErr(field, "a string", v)
	}
	s, ok := unquote(v)
	if !ok {
		return "", utf8Err(field)
	}
	return s, nil
}

// stringFieldTo decodes a JSON string member onto b (unquoteTo).
func stringFieldTo(b *strings.Builder, v rawValue, field string) error {
	if !v.isString() {
		return typeErr(field, "a string", v)
	}
	if !unquoteTo(b, v) {
		return utf8Err(field)
	}
	return nil
}

// stringList decodes a JSON array of strings; nil when v is absent, empty
// (not nil) when v is [].
func stringList(v rawValue, field string) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	if !v.isArray() {
		return nil, typeErr(field, "an array", v)
	}
	out := make([]string, 0, count(v))
	for it := elements(v); it.next(); {
		if !it.val.isString() {
			return nil, typeErr(fmt.Sprintf("%s[%d]", field, len(out)), "a string", it.val)
		}
		s, ok := unquote(it.val)
		if !ok {
			return nil, utf8Err(fmt.Sprintf("%s[%d]", field, len(out)))
		}
		out = append(out, s)
	}
	return out, nil
}

// intField parses a JSON integer within [lo, hi]. Strings, fractions,
// exponents and nulls are rejected with the field's name.
func intField(v rawValue, field string, lo, hi int64) (int64, error) {
	if !v.isNumber() {
		return 0, typeErr(field, "an integer", v)
	}
	n, problem := intValue(v, lo, hi)
	if problem != "" {
		return 0, badf("%s %s", field, problem)
	}
	return n, nil
}

// intValue parses a JSON number as an integer within [lo, hi]. On failure
// it says what is wrong, worded to follow the field's name.
func intValue(v rawValue, lo, hi int64) (int64, string) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("must be an integer, got %.40s", v)
	}
	if n < lo || n > hi {
		return 0, fmt.Sprintf("must be between %d and %d, got %d", lo, hi, n)
	}
	return n, ""
}

// uintField parses a JSON unsigned 64-bit integer. Versions and view IDs
// are carried as JSON strings of decimal digits too, since JSON numbers
// above 2^53 do not survive every parser.
func uintField(v rawValue, field string) (uint64, error) {
	var digits string
	switch {
	case v.isNumber():
		digits = string(v)
	case v.isString():
		var err error
		if digits, err = stringField(v, field); err != nil {
			return 0, err
		}
	default:
		return 0, typeErr(field, "an unsigned integer or a string of its decimal digits", v)
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, badf("%s must be an unsigned integer, got %.40q", field, digits)
	}
	return n, nil
}
