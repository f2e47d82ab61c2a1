package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"pgregory.net/rapid"
)

const okCallback = `"callback":{"http":{"uri":"http://client.example/cb","opaque":"x"}}`

// TestClientBodyRoundTrip proves Encode, the client body builder the
// simulator and the tests use, writes what Parse reads back: the same
// definition, with a repeat-for of 0 taken as one interval.
func TestClientBodyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		interval := rapid.Int64Range(0, MaxTimingSeconds).Draw(t, "interval")
		repeatFor := int64(0)
		if interval > 0 {
			repeatFor = rapid.Int64Range(0, MaxTimingSeconds).Draw(t, "repeat-for")
		}
		in := Timer{Interval: time.Duration(interval) * time.Second, RepeatFor: time.Duration(repeatFor) * time.Second,
			URI:               "http://127.0.0.1:" + strconv.Itoa(rapid.IntRange(1, 65535).Draw(t, "port")) + "/cb",
			Opaque:            rapid.StringMatching(`[\x20-\x7e\x{e9}\x{263a}]{0,20}`).Draw(t, "opaque"),
			ReplicationFactor: rapid.IntRange(0, MaxReplicationFactor).Draw(t, "rf")}
		if rapid.Bool().Draw(t, "tagged") {
			in.Tags = []Tag{{Type: rapid.StringMatching(`[A-Z]{1,8}`).Draw(t, "tag"), Count: rapid.IntRange(1, 100).Draw(t, "count")}}
		}
		got, repl, err := Parse(Encode(in))
		if err != nil || repl != nil {
			t.Fatalf("Parse(Encode(%+v)): replication %v, error %v; want a client body", in, repl, err)
		}
		want := in
		if want.RepeatFor == 0 {
			want.RepeatFor = want.Interval
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
	})
}

// FuzzParseBody proves the body parser never panics, that whatever it
// accepts is within the validated bounds and holds only valid UTF-8, that
// its strings are what encoding/json reads at the exact keys, and that an
// accepted internal body, re-encoded, parses back to the same definition.
// A refusal's reason is printable UTF-8, fit for the Reason header.
func FuzzParseBody(f *testing.F) {
	f.Add([]byte(`{"timing":{"interval":5,"repeat-for":50},` + okCallback + `}`))
	f.Add([]byte(`{"timing":{"interval":0},` + okCallback + `,"statistics":{"tag-info":[{"type":"A"}]}}`))
	f.Add(AppendReplication(nil, &Timer{Interval: time.Second, RepeatFor: time.Second, URI: "http://a/"},
		&Replication{Replicas: []string{"a:1"}}))
	f.Add([]byte(`{"timing":{"interval":1e400}}`))
	f.Add([]byte(benchClientBody))
	f.Add([]byte(benchInternalBody))
	f.Add([]byte(exactClientBody))
	f.Add([]byte(exactInternalBody))
	f.Add([]byte(`{"Timing":{"interval":5},` + okCallback + `}`))
	f.Add([]byte(`{"timing":{"Interval":5,"interv\u0061l":6},"callback":{"http":{"URI":"http://a/","uri":"http://b/"}}}`))
	f.Add([]byte("{\"timing\":{\"interval\":5},\"callback\":{\"http\":{\"uri\":\"http://a/\",\"opaque\":\"\xff\xc3\"}}}"))
	f.Add([]byte(`{"timing":{"interval":5},"callback":{"http":{"uri":"http://a/","opaque":"\ud800 \udc00 \ud83d\ude00 \u0000"}}}`))
	f.Add([]byte(`{"timing":{"interval":5},"callback":{"http":{"uri":"http:\/\/a\/","opaque":"\ud83d\ude00\u0000\n\"\\"}}}`))
	f.Add(AppendReplication(nil, &Timer{Interval: 2 * time.Second, ReplicationFactor: 3},
		&Replication{Version: 5, Sites: []string{"s1", "s2"}}))
	f.Add(AppendReplication(nil, &Timer{Interval: time.Second, RepeatFor: time.Second, URI: "http://a/"},
		&Replication{Replicas: []string{"a:1", "b:2"}, Lacking: []string{"b:2"}}))
	f.Add([]byte(`{"timing":{"interval":5},"callback":{"http":{"uri":"http://a:0/"}}}`))
	f.Add([]byte(`{"timing":{"interval":5},"callback":{"http":{"uri":"http://a:70000/"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, repl, err := Parse(body)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "wire: bad request: ") {
				t.Fatalf("error %q is not a bad request", err)
			}
			checkReasonPrintable(t, err.(*BadRequestError).Reason)
			return
		}
		if spec.Interval < 0 || spec.RepeatFor < spec.Interval && spec.RepeatFor != 0 && spec.Interval == 0 {
			t.Fatalf("accepted bad timing %+v", spec)
		}
		if spec.ReplicationFactor < 0 || spec.ReplicationFactor > MaxReplicationFactor || len(spec.Tags) > MaxTags {
			t.Fatalf("accepted bad spec %+v", spec)
		}
		if repl == nil && spec.URI == "" {
			t.Fatalf("accepted a client body without a callback: %+v", spec)
		}
		checkStringsUTF8(t, spec, repl)
		checkAsStdlibReads(t, body, spec, repl)
		if repl != nil {
			checkReencoded(t, spec, repl)
		}
	})
}

// checkReasonPrintable fails if a refusal's reason holds invalid UTF-8 or
// control characters, which a Reason header must not carry.
func checkReasonPrintable(t *testing.T, reason string) {
	t.Helper()
	if !utf8.ValidString(reason) || strings.ContainsFunc(reason, unicode.IsControl) {
		t.Fatalf("reason: got %q, want printable UTF-8", reason)
	}
}

// checkStringsUTF8 fails if an accepted body yielded a string that is not
// valid UTF-8.
func checkStringsUTF8(t *testing.T, spec Timer, repl *Replication) {
	t.Helper()
	strs := []string{spec.URI, spec.Opaque}
	for _, tag := range spec.Tags {
		strs = append(strs, tag.Type)
	}
	if repl != nil {
		strs = append(append(append(append(strs, repl.Replicas...), repl.Sites...), repl.Lacking...), repl.SitesLacking...)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			t.Fatalf("accepted invalid UTF-8 %q in %+v %+v", s, spec, repl)
		}
	}
}

// checkAsStdlibReads fails unless the accepted body's values are what
// encoding/json decodes at the same exact keys (decoding into maps, whose
// keys it does not fold). Where a string is valid, as an accepted one is,
// encoding/json decodes it exactly, so the two must agree.
func checkAsStdlibReads(t *testing.T, body []byte, spec Timer, repl *Replication) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("Parse accepted what encoding/json refuses (%v): %q", err, body)
	}
	want := map[string]any{"interval": float64(spec.Interval / time.Second)}
	got := map[string]any{"interval": jsonAt(doc, "timing", "interval")}
	if spec.URI != "" {
		want["uri"], got["uri"] = spec.URI, jsonAt(doc, "callback", "http", "uri")
		want["opaque"], got["opaque"] = spec.Opaque, jsonAt(doc, "callback", "http", "opaque")
		if got["opaque"] == nil {
			got["opaque"] = ""
		}
	}
	for i, tag := range spec.Tags {
		k := fmt.Sprint("tag ", i)
		want[k], got[k] = tag.Type, jsonAt(doc, "statistics", "tag-info", i, "type")
	}
	if repl != nil {
		for i, r := range repl.Replicas {
			k := fmt.Sprint("replica ", i)
			want[k], got[k] = r, jsonAt(doc, "reliability", "replicas", i)
		}
		for i, s := range repl.Sites {
			k := fmt.Sprint("site ", i)
			want[k], got[k] = s, jsonAt(doc, "reliability", "sites", i)
		}
		for i, s := range repl.Lacking {
			k := fmt.Sprint("lacking ", i)
			want[k], got[k] = s, jsonAt(doc, "reliability", "lacking", i)
		}
		for i, s := range repl.SitesLacking {
			k := fmt.Sprint("sites lacking ", i)
			want[k], got[k] = s, jsonAt(doc, "reliability", "sites-lacking", i)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("encoding/json reads %q as\n got %v\nwant %v (Parse's)", body, got, want)
	}
}

// jsonAt is the value encoding/json decoded at path (object keys and array
// indices), nil where there is none.
func jsonAt(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			a, _ := v.([]any)
			if p >= len(a) {
				return nil
			}
			v = a[p]
		}
	}
	return v
}

// checkReencoded fails unless the timer an internal body describes,
// encoded with AppendReplication, parses back to the same definition:
// nothing the parser accepts is lost on the next hop. (The node's record
// keeps what this carries: node's TestReplicationBodyRoundTrip.)
func checkReencoded(t *testing.T, spec Timer, repl *Replication) {
	t.Helper()
	body := AppendReplication(nil, &spec, repl)
	spec2, repl2, err := Parse(body)
	if err != nil {
		t.Fatalf("re-encoded body %s: got %v, want it accepted", body, err)
	}
	if !reflect.DeepEqual(spec2, spec) {
		t.Fatalf("re-encoded spec:\n got %+v\nwant %+v", spec2, spec)
	}
	// An empty site list and an absent one are the same placement.
	if repl2 == nil || repl2.StartTimeDelta != repl.StartTimeDelta || repl2.Seq != repl.Seq ||
		repl2.Version != repl.Version || repl2.ViewID != repl.ViewID ||
		repl2.Definition != repl.Definition || repl2.Missed != repl.Missed || repl2.FirstTry != repl.FirstTry ||
		!slices.Equal(repl2.Replicas, repl.Replicas) || !slices.Equal(repl2.Sites, repl.Sites) ||
		!slices.Equal(repl2.Lacking, repl.Lacking) || !slices.Equal(repl2.SitesLacking, repl.SitesLacking) {
		t.Fatalf("re-encoded replication:\n got %+v\nwant %+v", repl2, repl)
	}
}

// parseReason returns the reason Parse refuses body with, failing the
// test if it accepts it or fails with anything but a bad request.
func parseReason(t *testing.T, body string) string {
	t.Helper()
	spec, repl, err := Parse([]byte(body))
	if err == nil {
		t.Fatalf("Parse(%s): got %+v %+v, want a bad request", body, spec, repl)
	}
	var bad *BadRequestError
	if !errors.As(err, &bad) {
		t.Fatalf("Parse(%s): got error %v, want a *BadRequestError", body, err)
	}
	return bad.Reason
}

// goInternals are words a reason must not contain: they belong to the
// implementation (encoding/json's messages), not to the API.
var goInternals = []string{"Go ", "struct", "node.", "wire", "RawMessage", "unmarshal"}

func checkPlainReason(t *testing.T, reason string) {
	t.Helper()
	for _, w := range goInternals {
		if strings.Contains(reason, w) {
			t.Errorf("reason %q: got %q in it, want no Go internals", reason, w)
		}
	}
}

const (
	// exactClientBody uses every member of the client body.
	exactClientBody = `{"timing":{"interval":5,"repeat-for":50},` +
		`"callback":{"http":{"uri":"http://a/","opaque":"x"}},` +
		`"reliability":{"replication-factor":3},` +
		`"statistics":{"tag-info":[{"type":"CALL","count":2}]}}`
	// exactInternalBody uses every internal member.
	exactInternalBody = `{"timing":{"interval":5,"start-time-delta":-500,"sequence-number":2,"version":"9"},` +
		`"callback":{"http":{"uri":"http://a/"}},` +
		`"reliability":{"cluster-view-id":"4","replicas":["a:1"],"sites":["s1","s2"],"lacking":["a:1"],"sites-lacking":["s2"]}}`
)

// TestBodyKeysExact proves keys match exactly, as the original parser's
// lookups did, not case-insensitively as encoding/json's struct fields do
// (which also fold the long s and the Kelvin sign): a key spelt any other
// way is an unknown key, ignored, so a mandatory member is then missing
// and an optional one absent. A name with escapes matches once decoded.
func TestBodyKeysExact(t *testing.T) {
	client := Timer{Interval: 5 * time.Second, RepeatFor: 50 * time.Second, URI: "http://a/", Opaque: "x", ReplicationFactor: 3, Tags: []Tag{{"CALL", 2}}}
	internal := Timer{Interval: 5 * time.Second, RepeatFor: 5 * time.Second, URI: "http://a/"}
	repl := Replication{StartTimeDelta: -500 * time.Millisecond, Seq: 2, Version: 9, ViewID: 4, Replicas: []string{"a:1"}, Sites: []string{"s1", "s2"}, Lacking: []string{"a:1"}, SitesLacking: []string{"s2"}}
	with := func(s Timer, f func(*Timer)) *Timer { f(&s); return &s }
	withRepl := func(r Replication, f func(*Replication)) *Replication { f(&r); return &r }
	cases := []struct {
		base, key, as string
		reason        string // a substring of the reason when refused
		spec          *Timer
		repl          *Replication
	}{
		{exactClientBody, "timing", "Timing", "timing is missing", nil, nil},
		{exactClientBody, "interval", "Interval", "timing.interval is missing", nil, nil},
		{exactClientBody, "interval", "INTERVAL", "timing.interval is missing", nil, nil},
		{exactClientBody, "interval", `interv\u0061l`, "", &client, nil},
		{exactClientBody, "repeat-for", "Repeat-For", "", with(client, func(s *Timer) { s.RepeatFor = 5 * time.Second }), nil},
		{exactClientBody, "callback", "Callback", "callback is missing", nil, nil},
		{exactClientBody, "http", "HTTP", "exactly one mechanism", nil, nil},
		{exactClientBody, "uri", "Uri", "callback.http.uri is missing", nil, nil},
		{exactClientBody, "opaque", "Opaque", "", with(client, func(s *Timer) { s.Opaque = "" }), nil},
		{exactClientBody, "reliability", "Reliability", "", with(client, func(s *Timer) { s.ReplicationFactor = 0 }), nil},
		{exactClientBody, "replication-factor", "Replication-factor", "", with(client, func(s *Timer) { s.ReplicationFactor = 0 }), nil},
		{exactClientBody, "statistics", "Statistics", "", with(client, func(s *Timer) { s.Tags = nil }), nil},
		{exactClientBody, "statistics", "ſtatiſticſ", "", with(client, func(s *Timer) { s.Tags = nil }), nil},
		{exactClientBody, "tag-info", "Tag-Info", "", with(client, func(s *Timer) { s.Tags = nil }), nil},
		{exactClientBody, "type", "Type", "statistics.tag-info[0].type is missing", nil, nil},
		{exactClientBody, "count", "Count", "", with(client, func(s *Timer) { s.Tags = []Tag{{"CALL", 1}} }), nil},
		{exactInternalBody, "interval", "interval", "", &internal, &repl},
		{exactInternalBody, "replicas", "Replicas", "", &internal, nil},
		{exactInternalBody, "start-time-delta", "Start-Time-Delta", "", &internal, withRepl(repl, func(r *Replication) { r.StartTimeDelta = 0 })},
		{exactInternalBody, "sequence-number", "Sequence-Number", "", &internal, withRepl(repl, func(r *Replication) { r.Seq = 0 })},
		{exactInternalBody, "version", "Version", "", &internal, withRepl(repl, func(r *Replication) { r.Version = 0 })},
		{exactInternalBody, "cluster-view-id", "Cluster-View-Id", "", &internal, withRepl(repl, func(r *Replication) { r.ViewID = 0 })},
		{exactInternalBody, "sites", "Sites", "", &internal, withRepl(repl, func(r *Replication) { r.Sites = nil })},
		{exactInternalBody, "lacking", "Lacking", "", &internal, withRepl(repl, func(r *Replication) { r.Lacking = nil })},
		{exactInternalBody, "sites-lacking", "Sites-Lacking", "", &internal, withRepl(repl, func(r *Replication) { r.SitesLacking = nil })},
	}
	for _, tc := range cases {
		t.Run(tc.as, func(t *testing.T) {
			body := strings.Replace(tc.base, `"`+tc.key+`"`, `"`+tc.as+`"`, 1)
			if tc.reason != "" {
				if reason := parseReason(t, body); !strings.Contains(reason, tc.reason) {
					t.Errorf("reason: got %q, want it to contain %q", reason, tc.reason)
				}
				return
			}
			spec, repl, err := Parse([]byte(body))
			if err != nil {
				t.Fatalf("Parse(%s): got %v, want it accepted", body, err)
			}
			if !reflect.DeepEqual(spec, *tc.spec) {
				t.Errorf("spec:\n got %+v\nwant %+v", spec, *tc.spec)
			}
			if !reflect.DeepEqual(repl, tc.repl) {
				t.Errorf("replication:\n got %+v\nwant %+v", repl, tc.repl)
			}
		})
	}
}

// jsonKinds are a value of each JSON type, by the name reasons give it.
var jsonKinds = []struct{ name, value string }{
	{"an object", `{}`}, {"an array", `[]`}, {"a string", `"s"`},
	{"a number", `7`}, {"a boolean", `true`}, {"null", `null`},
}

// TestBodyTypeErrors proves a value of the wrong JSON type at any known
// field, null included, is refused with a reason that names the field and
// the JSON type it must have and has, in the API's words and none of Go's.
func TestBodyTypeErrors(t *testing.T) {
	const internal = `{"timing":{"interval":5,@T},` + okCallback + `,"reliability":{"replicas":["a:1"],@R}}`
	fields := []struct {
		field, body, want string
		right             []string // the kinds the field may have
	}{
		{"the body", `@`, "a JSON object", []string{"an object"}},
		{"timing", `{"timing":@,` + okCallback + `}`, "a JSON object", []string{"an object"}},
		{"timing.interval", `{"timing":{"interval":@},` + okCallback + `}`, "an integer", []string{"a number"}},
		{"timing.repeat-for", `{"timing":{"interval":5,"repeat-for":@},` + okCallback + `}`, "an integer", []string{"a number"}},
		{"callback", `{"timing":{"interval":5},"callback":@}`, "a JSON object", []string{"an object"}},
		{"callback.http", `{"timing":{"interval":5},"callback":{"http":@}}`, "a JSON object", []string{"an object"}},
		{"callback.http.uri", `{"timing":{"interval":5},"callback":{"http":{"uri":@}}}`, "a string", []string{"a string"}},
		{"callback.http.opaque", `{"timing":{"interval":5},"callback":{"http":{"uri":"http://a/","opaque":@}}}`, "a string", []string{"a string"}},
		{"reliability", `{"timing":{"interval":5},` + okCallback + `,"reliability":@}`, "a JSON object", []string{"an object"}},
		{"reliability.replication-factor", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replication-factor":@}}`, "an integer", []string{"a number"}},
		{"statistics", `{"timing":{"interval":5},` + okCallback + `,"statistics":@}`, "a JSON object", []string{"an object"}},
		{"statistics.tag-info", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":@}}`, "an array", []string{"an array"}},
		{"statistics.tag-info[1]", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"type":"A"},@]}}`, "a JSON object", []string{"an object"}},
		{"statistics.tag-info[0].type", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"type":@}]}}`, "a string", []string{"a string"}},
		{"statistics.tag-info[0].count", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"type":"A","count":@}]}}`, "an integer", []string{"a number"}},
		{"timing.start-time-delta", strings.Replace(internal, "@T", `"start-time-delta":@`, 1), "an integer", []string{"a number"}},
		{"timing.sequence-number", strings.Replace(internal, "@T", `"sequence-number":@`, 1), "an integer", []string{"a number"}},
		{"timing.version", strings.Replace(internal, "@T", `"version":@`, 1), "an unsigned integer or a string of its decimal digits", []string{"a number", "a string"}},
		{"reliability.cluster-view-id", strings.Replace(internal, "@R", `"cluster-view-id":@`, 1), "an unsigned integer or a string of its decimal digits", []string{"a number", "a string"}},
		{"reliability.replicas", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replicas":@}}`, "an array", []string{"an array"}},
		{"reliability.replicas[1]", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replicas":["a:1",@]}}`, "a string", []string{"a string"}},
		{"reliability.sites", strings.Replace(internal, "@R", `"sites":@`, 1), "an array", []string{"an array"}},
		{"reliability.sites", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replicas":[],"sites":@}}`, "an array", []string{"an array"}},
		{"reliability.sites[0]", strings.Replace(internal, "@R", `"sites":[@]`, 1), "a string", []string{"a string"}},
	}
	for _, f := range fields {
		body := strings.NewReplacer(",@T", "", ",@R", "").Replace(f.body)
		for _, k := range jsonKinds {
			if slices.Contains(f.right, k.name) {
				continue
			}
			t.Run(f.field+"="+k.value, func(t *testing.T) {
				reason := parseReason(t, strings.Replace(body, "@", k.value, 1))
				if want := f.field + " must be " + f.want + ", got " + k.name; !strings.Contains(reason, want) {
					t.Errorf("reason: got %q, want it to contain %q", reason, want)
				}
				checkPlainReason(t, reason)
			})
		}
	}
}

// TestBodyNotJSON proves a body that is not one JSON value (empty, not
// JSON, cut short, or followed by more data) is refused with a plain
// reason.
func TestBodyNotJSON(t *testing.T) {
	cases := []struct{ name, body, reason string }{
		{"empty", ``, "the body is empty"},
		{"blank", " \r\n\t", "the body is empty"},
		{"not JSON", `<timer/>`, "not a valid JSON timer: invalid character '<'"},
		{"cut short", `{"timing":{"interval":5}`, "not a valid JSON timer: it ends inside a value"},
		{"bad escape", `{"timing":{"interval":5},"x":"\q"}`, "not a valid JSON timer: invalid character 'q'"},
		{"control character", "{\"x\":\"a\x01\"}", "not a valid JSON timer: invalid character"},
		{"second value", `{"timing":{"interval":5}} {}`, "after the JSON value"},
		{"extra brace", `{"timing":{"interval":5}}}`, "after the JSON value"},
		{"extra bracket", `{"timing":{"interval":5}}]`, "after the JSON value"},
		{"too deep", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "exceeded max depth"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason := parseReason(t, tc.body)
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("reason: got %q, want it to contain %q", reason, tc.reason)
			}
			checkPlainReason(t, reason)
		})
	}
}

// TestBodyStringsLossFree proves a string member that encoding/json would
// decode with U+FFFD in place of some of its bytes (invalid UTF-8, or an
// escaped UTF-16 surrogate without its pair) is refused with the field's
// name, in every string field, instead of being delivered altered.
func TestBodyStringsLossFree(t *testing.T) {
	const internal = `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replicas":["a:1"],"sites":["s1"]}}`
	fields := []struct{ field, body string }{
		{"callback.http.uri", `{"timing":{"interval":5},"callback":{"http":{"uri":"http://a/@"}}}`},
		{"callback.http.opaque", `{"timing":{"interval":5},"callback":{"http":{"uri":"http://a/","opaque":"x@y"}}}`},
		{"statistics.tag-info[1].type", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"type":"A"},{"type":"@"}]}}`},
		{"reliability.replicas[0]", strings.Replace(internal, `"a:1"`, `"a:1@"`, 1)},
		{"reliability.sites[0]", strings.Replace(internal, `"s1"`, `"@s1"`, 1)},
		{"timing.version", strings.Replace(internal, `"interval":5`, `"interval":5,"version":"1@"`, 1)},
		{"reliability.cluster-view-id", strings.Replace(internal, `"replicas"`, `"cluster-view-id":"@1","replicas"`, 1)},
	}
	bad := []struct{ name, value string }{
		{"invalid byte", "\xff"},
		{"cut-off sequence", "\xc3"},
		{"overlong encoding", "\xc0\xaf"},
		{"encoded surrogate", "\xed\xa0\x80"},
		{"lone high surrogate", `\ud800`},
		{"lone low surrogate", `\udc00`},
		{"high surrogate at the end", `\uD83D`},
		{"high surrogate then a letter", `\ud83dA`},
		{"high surrogate then an escape", `\ud83d\u0041`},
		{"two high surrogates", `\ud83d\ud83d`},
		{"pair reversed", `\ude00\ud83d`},
	}
	for _, f := range fields {
		for _, b := range bad {
			t.Run(f.field+"/"+b.name, func(t *testing.T) {
				reason := parseReason(t, strings.Replace(f.body, "@", b.value, 1))
				if want := f.field + " is not valid UTF-8 (or holds an unpaired surrogate escape)"; reason != want {
					t.Errorf("reason: got %q, want %q", reason, want)
				}
			})
		}
	}
}

// TestBodyStringsDecoded proves every JSON escape, and literal UTF-8,
// decode to exactly the bytes they stand for, and that a member name which
// does not decode is an unknown key, ignored like any other (two such in
// one object are one name, U+FFFD, as encoding/json decodes them).
func TestBodyStringsDecoded(t *testing.T) {
	cases := []struct{ name, json, want string }{
		{"plain", `call-id=4fe3a2`, "call-id=4fe3a2"},
		{"empty", ``, ""},
		{"short escapes", `\n\r\t\b\f`, "\n\r\t\b\f"},
		{"quote, backslash, slash", `\"\\\/`, `"\/`},
		{"NUL", `a\u0000b`, "a\x00b"},
		{"latin escape and literal", `\u00e9é`, "éé"},
		{"upper-case hex", `\u00C9`, "É"},
		{"surrogate pair", `\ud83d\ude00`, "😀"},
		{"surrogate pair, upper case", `\uD83D\uDE00`, "😀"},
		{"literal emoji", `😀`, "😀"},
		{"last BMP code point", `\uffff`, "\uffff"},
		{"explicit replacement character", `\ufffd`, "\ufffd"},
		{"escape at each end", `\u0041` + strings.Repeat("x", 100) + `\t`, "A" + strings.Repeat("x", 100) + "\t"},
		{"line separator", `\u2028`, "\u2028"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"timing":{"interval":5},"callback":{"http":{"uri":"http:\/\/a\/","opaque":"` + tc.json + `"}},` +
				`"statistics":{"tag-info":[{"type":"` + tc.json + `x"}],` + "\"\xff\":2}," + `"\ud800":1}`
			spec, _, err := Parse([]byte(body))
			if err != nil {
				t.Fatalf("Parse: got %v, want it accepted", err)
			}
			if spec.Opaque != tc.want {
				t.Errorf("opaque: got %q, want %q", spec.Opaque, tc.want)
			}
			if got, want := spec.Tags[0].Type, tc.want+"x"; got != want {
				t.Errorf("tag type: got %q, want %q", got, want)
			}
			if spec.URI != "http://a/" {
				t.Errorf("uri: got %q, want %q", spec.URI, "http://a/")
			}
		})
	}
}

// TestCallbackURIPort proves a callback URI is refused, naming the field,
// unless its port (if it has one) is decimal digits from 1 to 65535:
// url.Parse alone takes ports 0 and above 65535. An empty port is the
// scheme's default.
func TestCallbackURIPort(t *testing.T) {
	cases := []struct {
		uri    string
		reason string // a substring of the reason, "" when accepted
	}{
		{"http://h/", ""},
		{"http://h:1/", ""},
		{"http://h:8080/cb", ""},
		{"https://h:65535/", ""},
		{"http://h:080/", ""},
		{"http://[::1]:8080/x", ""},
		{"http://h:/", ""},
		{"http://h:0/", "has port \"0\", which is not 1 to 65535"},
		{"https://h:00/", "has port \"00\", which is not 1 to 65535"},
		{"http://[::1]:0/", "has port \"0\", which is not 1 to 65535"},
		{"http://h:65536/", "has port \"65536\", which is not 1 to 65535"},
		{"http://h:70000/", "has port \"70000\", which is not 1 to 65535"},
		{"http://h:99999/", "has port \"99999\", which is not 1 to 65535"},
		{"http://h:99999999999999999999/", "which is not 1 to 65535"},
		{"http://h:8a/", "is not an absolute http or https URL"},
		{"http://h:+80/", "is not an absolute http or https URL"},
		{"http://h:-1/", "is not an absolute http or https URL"},
		{"http://h:٨٠/", "is not an absolute http or https URL"},
		{"http://:80/", "is not an absolute http or https URL"},
	}
	for _, tc := range cases {
		t.Run(tc.uri, func(t *testing.T) {
			body := `{"timing":{"interval":5},"callback":{"http":{"uri":"` + tc.uri + `"}}}`
			if tc.reason == "" {
				if spec, _, err := Parse([]byte(body)); err != nil || spec.URI != tc.uri {
					t.Errorf("Parse: got %q, %v, want %q accepted", spec.URI, err, tc.uri)
				}
				return
			}
			reason := parseReason(t, body)
			if want := "callback.http.uri " + strconv.Quote(tc.uri) + " "; !strings.HasPrefix(reason, want) {
				t.Errorf("reason: got %q, want it to start with %q", reason, want)
			}
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("reason: got %q, want it to contain %q", reason, tc.reason)
			}
		})
	}
}

// The reference the hand-written encoders are checked against: the types
// encoding/json wrote every body from before they were appended by hand.
type refBody struct {
	Timing      refTiming               `json:"timing"`
	Callback    map[string]*refCallback `json:"callback"`
	Reliability *refReliability         `json:"reliability,omitempty"`
	Statistics  *refStatistics          `json:"statistics,omitempty"`
}

type refTiming struct {
	Interval       int64   `json:"interval"`
	RepeatFor      int64   `json:"repeat-for"`
	StartTimeDelta *int64  `json:"start-time-delta,omitempty"`
	SequenceNumber *uint32 `json:"sequence-number,omitempty"`
	Version        string  `json:"version,omitempty"`
	Definition     uint32  `json:"definition,omitempty"`
	Missed         uint32  `json:"missed,omitempty"`
	FirstTry       uint64  `json:"first-try,omitempty,string"`
}

type refReliability struct {
	ClusterViewID     string    `json:"cluster-view-id,omitempty"`
	Replicas          *[]string `json:"replicas,omitempty"`
	Sites             []string  `json:"sites,omitempty"`
	Lacking           []string  `json:"lacking,omitempty"`
	SitesLacking      []string  `json:"sites-lacking,omitempty"`
	ReplicationFactor int       `json:"replication-factor,omitempty"`
}

type refStatistics struct {
	TagInfo []Tag `json:"tag-info"`
}

type refCallback struct {
	URI    string `json:"uri"`
	Opaque string `json:"opaque"`
}

func refSpec(s Timer) []byte {
	b := refBody{
		Timing:   refTiming{Interval: int64(s.Interval / time.Second), RepeatFor: int64(s.RepeatFor / time.Second)},
		Callback: map[string]*refCallback{"http": {URI: s.URI, Opaque: s.Opaque}},
	}
	if s.ReplicationFactor > 0 {
		b.Reliability = &refReliability{ReplicationFactor: s.ReplicationFactor}
	}
	if len(s.Tags) > 0 {
		b.Statistics = &refStatistics{s.Tags}
	}
	return mustMarshal(b)
}

func refReplication(t *Timer, r *Replication) []byte {
	delta, seq := r.StartTimeDelta.Milliseconds(), r.Seq
	replicas := r.Replicas
	if replicas == nil {
		replicas = []string{}
	}
	b := refBody{
		Timing: refTiming{Interval: int64(t.Interval / time.Second), RepeatFor: int64(t.RepeatFor / time.Second),
			StartTimeDelta: &delta, SequenceNumber: &seq,
			Version: strconv.FormatUint(r.Version, 10), Definition: r.Definition, Missed: r.Missed, FirstTry: r.FirstTry},
		Callback: map[string]*refCallback{},
		Reliability: &refReliability{ClusterViewID: strconv.FormatUint(r.ViewID, 10),
			Replicas: &replicas, Sites: r.Sites, Lacking: r.Lacking, SitesLacking: r.SitesLacking, ReplicationFactor: t.ReplicationFactor},
	}
	if t.URI != "" {
		b.Callback["http"] = &refCallback{URI: t.URI, Opaque: t.Opaque}
	}
	if len(t.Tags) > 0 {
		b.Statistics = &refStatistics{t.Tags}
	}
	return mustMarshal(b)
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// anyString draws a string of arbitrary bytes, biased to those JSON
// escapes: control and HTML characters, quotes, U+2028 and U+2029, and
// invalid UTF-8.
func anyString(t *rapid.T, label string) string {
	pieces := rapid.SliceOfN(rapid.SampledFrom([]string{
		"a", "Z", "/", ":", " ", "\x00", "\x1f", "\x7f", "\b", "\f", "\n", "\r", "\t",
		`"`, `\`, "<", ">", "&", "\u2028", "\u2029", "é", "€", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80",
	}), 0, 12).Draw(t, label)
	return strings.Join(pieces, "")
}

// TestEncodeMatchesReference proves the hand-written encoders write, byte
// for byte, what encoding/json wrote for the reference types, for client
// and internal bodies with any strings, numbers and optional members.
func TestEncodeMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tags []Tag
		for i := range rapid.IntRange(0, 3).Draw(t, "tags") {
			tags = append(tags, Tag{Type: anyString(t, fmt.Sprint("tag ", i)), Count: rapid.IntRange(-5, 1<<40).Draw(t, "count")})
		}
		spec := Timer{
			Interval:          time.Duration(rapid.Int64().Draw(t, "interval")),
			RepeatFor:         time.Duration(rapid.Int64().Draw(t, "repeat-for")),
			URI:               anyString(t, "uri"),
			Opaque:            anyString(t, "opaque"),
			ReplicationFactor: rapid.IntRange(-2, 300).Draw(t, "rf"),
			Tags:              tags,
		}
		if got, want := Encode(spec), refSpec(spec); !slices.Equal(got, want) {
			t.Fatalf("Encode(%+v)\n got %s\nwant %s", spec, got, want)
		}
		var replicas, sites, lacking []string
		for i := range rapid.IntRange(-1, 3).Draw(t, "replicas") {
			replicas = append(replicas, anyString(t, fmt.Sprint("replica ", i)))
		}
		for i := range rapid.IntRange(0, 3).Draw(t, "sites") {
			sites = append(sites, anyString(t, fmt.Sprint("site ", i)))
		}
		for i := range rapid.IntRange(0, 2).Draw(t, "lacking") {
			lacking = append(lacking, anyString(t, fmt.Sprint("lacking ", i)))
		}
		var sitesLacking []string
		for i := range rapid.IntRange(0, len(sites)).Draw(t, "sites lacking") {
			sitesLacking = append(sitesLacking, anyString(t, fmt.Sprint("sites lacking ", i)))
		}
		if rapid.Bool().Draw(t, "tombstone") {
			spec.URI, spec.Opaque = "", ""
		}
		spec.ReplicationFactor = int(rapid.Uint8().Draw(t, "timer rf"))
		r := &Replication{
			StartTimeDelta: time.Duration(rapid.Int64Range(math.MinInt64/int64(time.Millisecond), math.MaxInt64/int64(time.Millisecond)).Draw(t, "delta")) * time.Millisecond,
			Seq:            rapid.Uint32().Draw(t, "seq"), Version: rapid.Uint64().Draw(t, "version"),
			ViewID: rapid.Uint64().Draw(t, "view"), Definition: rapid.Uint32().Draw(t, "def"),
			Missed: rapid.Uint32().Draw(t, "missed"), Replicas: replicas, Sites: sites, Lacking: lacking,
			SitesLacking: sitesLacking, FirstTry: rapid.Uint64().Draw(t, "first try"),
		}
		if got, want := AppendReplication(nil, &spec, r), refReplication(&spec, r); !slices.Equal(got, want) {
			t.Fatalf("AppendReplication(%+v, %+v)\n got %s\nwant %s", spec, r, got, want)
		}
	})
}
