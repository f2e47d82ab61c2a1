package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chronos-timer/chronos/wire"
)

const okCallback = `"callback":{"http":{"uri":"http://client.example/cb","opaque":"x"}}`

// TestCreateValidation proves every validation rule of docs/design.md 4.6 on
// POST /timers: each bad body gets 400 with the reason in both the Reason
// header and the body, each good one 200.
func TestCreateValidation(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		status int
		reason string // a substring of the reason, for 400s
	}{
		{"minimal", `{"timing":{"interval":5},` + okCallback + `}`, 200, ""},
		{"repeating", `{"timing":{"interval":5,"repeat-for":50},` + okCallback + `}`, 200, ""},
		{"interval zero", `{"timing":{"interval":0},` + okCallback + `}`, 200, ""},
		{"interval zero repeat zero", `{"timing":{"interval":0,"repeat-for":0},` + okCallback + `}`, 200, ""},
		{"repeat below interval", `{"timing":{"interval":5,"repeat-for":1},` + okCallback + `}`, 200, ""},
		{"https callback", `{"timing":{"interval":5},"callback":{"http":{"uri":"https://c.example:8443/x"}}}`, 200, ""},
		{"unknown fields ignored", `{"timing":{"interval":5},"future":1,` + okCallback + `}`, 200, ""},
		{"tags", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"type":"CALL","count":2},{"type":"SUB"}]}}`, 200, ""},
		{"rf 3", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replication-factor":3}}`, 200, ""},

		{"empty body", ``, 400, "not a valid JSON"},
		{"malformed JSON", `{"timing":`, 400, "not a valid JSON"},
		{"not an object", `[1,2]`, 400, "the body must be a JSON object, got an array"},
		{"trailing data", `{"timing":{"interval":5},` + okCallback + `} {}`, 400, "after the JSON"},
		{"timing missing", `{` + okCallback + `}`, 400, "timing is missing"},
		{"timing wrong type", `{"timing":5,` + okCallback + `}`, 400, "timing must be a JSON object, got a number"},
		{"interval missing", `{"timing":{"repeat-for":5},` + okCallback + `}`, 400, "interval is missing"},
		{"interval string", `{"timing":{"interval":"5"},` + okCallback + `}`, 400, "interval must be an integer"},
		{"interval null", `{"timing":{"interval":null},` + okCallback + `}`, 400, "interval"},
		{"interval fraction", `{"timing":{"interval":1.5},` + okCallback + `}`, 400, "interval must be an integer"},
		{"interval exponent", `{"timing":{"interval":1e3},` + okCallback + `}`, 400, "interval must be an integer"},
		{"interval negative", `{"timing":{"interval":-1},` + okCallback + `}`, 400, "between 0 and"},
		{"interval absurd", `{"timing":{"interval":99999999999},` + okCallback + `}`, 400, "between 0 and"},
		{"interval overflow", `{"timing":{"interval":99999999999999999999},` + okCallback + `}`, 400, "interval must be an integer"},
		{"repeat-for negative", `{"timing":{"interval":5,"repeat-for":-5},` + okCallback + `}`, 400, "repeat-for must be between"},
		{"repeat-for bool", `{"timing":{"interval":5,"repeat-for":true},` + okCallback + `}`, 400, "repeat-for must be an integer"},
		{"interval zero repeating", `{"timing":{"interval":0,"repeat-for":10},` + okCallback + `}`, 400, "absent or 0"},
		{"callback missing", `{"timing":{"interval":5}}`, 400, "callback is missing"},
		{"callback other mechanism", `{"timing":{"interval":5},"callback":{"sip":{"uri":"sip:a@b"}}}`, 400, "exactly one mechanism"},
		{"callback two mechanisms", `{"timing":{"interval":5},"callback":{"http":{"uri":"http://a/"},"sip":{}}}`, 400, "exactly one mechanism"},
		{"callback http not object", `{"timing":{"interval":5},"callback":{"http":"x"}}`, 400, "callback.http must be a JSON object, got a string"},
		{"uri missing", `{"timing":{"interval":5},"callback":{"http":{"opaque":"x"}}}`, 400, "uri is missing"},
		{"uri empty", `{"timing":{"interval":5},"callback":{"http":{"uri":""}}}`, 400, "uri is missing"},
		{"uri not http", `{"timing":{"interval":5},"callback":{"http":{"uri":"ftp://a/b"}}}`, 400, "not an absolute http"},
		{"uri relative", `{"timing":{"interval":5},"callback":{"http":{"uri":"/cb"}}}`, 400, "not an absolute http"},
		{"uri garbage", `{"timing":{"interval":5},"callback":{"http":{"uri":"http://[::1"}}}`, 400, "not an absolute http"},
		{"uri number", `{"timing":{"interval":5},"callback":{"http":{"uri":7}}}`, 400, "callback.http.uri must be a string, got a number"},
		{"opaque number", `{"timing":{"interval":5},"callback":{"http":{"uri":"http://a/","opaque":7}}}`, 400, "callback.http.opaque must be a string, got a number"},
		{"rf zero", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replication-factor":0}}`, 400, "replication-factor must be between 1"},
		{"rf negative", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replication-factor":-2}}`, 400, "replication-factor must be between 1"},
		{"rf string", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replication-factor":"2"}}`, 400, "replication-factor must be an integer"},
		{"rf absurd", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replication-factor":1000}}`, 400, "replication-factor must be between 1"},
		{"replicas from a client", `{"timing":{"interval":5},` + okCallback + `,"reliability":{"replicas":["a:1"]}}`, 400, "only for replication"},
		{"tag without type", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"count":1}]}}`, 400, "type is missing"},
		{"tag count zero", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"type":"A","count":0}]}}`, 400, "count must be between 1"},
		{"tag count negative", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"type":"A","count":-3}]}}`, 400, "count must be between 1"},
		{"tag count string", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[{"type":"A","count":"1"}]}}`, 400, "count must be an integer"},
		{"tag-info not array", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":{}}}`, 400, "statistics.tag-info must be an array, got an object"},
		{"too many tags", `{"timing":{"interval":5},` + okCallback + `,"statistics":{"tag-info":[` + strings.Repeat(`{"type":"A"},`, wire.MaxTags) + `{"type":"B"}]}}`, 400, "more than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			r := h.do("POST", "/timers", tc.body)
			if r.Status != tc.status {
				t.Fatalf("status: got %d (%s), want %d", r.Status, r.Body, tc.status)
			}
			if tc.status != 400 {
				return
			}
			reason := r.Header.Get(wire.HeaderReason)
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("Reason header: got %q, want it to contain %q", reason, tc.reason)
			}
			if string(r.Body) != reason {
				t.Errorf("body: got %q, want the reason %q", r.Body, reason)
			}
		})
	}
}

// TestRouting proves unknown routes get 404, wrong methods 405 with Allow,
// malformed timer IDs 400, and GET and HEAD /ping 200.
func TestRouting(t *testing.T) {
	cases := []struct {
		method, url string
		status      int
	}{
		{"GET", "/ping", 200},
		{"GET", "/ping?x=1", 200},
		{"HEAD", "/ping", 200},
		{"POST", "/ping", 405},
		{"GET", "/", 404},
		{"GET", "/nothing", 404},
		{"GET", "/timersx", 404},
		{"PATCH", "/timers", 405},
		{"DELETE", "/timers", 405},
		{"GET", "/timers/0000000000000001ffffffffffffffff", 404},
		{"GET", "/timers/xyz", 400},
		{"PATCH", "/timers/0000000000000001ffffffffffffffff", 405},
		{"DELETE", "/timers/xyz", 400},
		{"DELETE", "/timers/", 400},
		{"PUT", "/timers/0000000000000001fffffffffffffffg", 400},
		{"PUT", "/timers/+000000000000001ffffffffffffffff", 400},
		{"DELETE", "/timers/0000000000000001ffffffffffffffff", 200},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s", tc.method, tc.url), func(t *testing.T) {
			h := newHarness(t)
			r := h.do(tc.method, tc.url, "")
			if r.Status != tc.status {
				t.Fatalf("status: got %d (%s), want %d", r.Status, r.Body, tc.status)
			}
			if tc.status == 405 && r.Header.Get("Allow") == "" {
				t.Errorf("405 without an Allow header")
			}
		})
	}
}

// TestReplicationBodyRoundTrip proves the internal PUT body carries a
// timer's definition and replication state intact, tombstones included.
func TestReplicationBodyRoundTrip(t *testing.T) {
	for _, tomb := range []bool{false, true} {
		in := withCallback(withParts(&Timer{
			ID: 7, Version: 1<<60 + 3, Start: 1000, interval: sec(5 * time.Second), repeatFor: sec(20 * time.Second),
			Seq: 2, RF: 3,
		}, &Placement{Replicas: []string{"a:1", "b:1", "c:1"}, Sites: []string{"s1", "s2"}, View: 1<<63 + 1}, &TimerExtra{Tags: []wire.Tag{{Type: "CALL", Count: 2}}}), "http://c.example/x", "op")
		if tomb {
			in.State = Tombstone
		}
		spec, r, err := wire.Parse(EncodeReplication(in, 1500))
		if err != nil {
			t.Fatalf("wire.Parse: %v", err)
		}
		if r == nil {
			t.Fatalf("wire.Parse: no replication part")
		}
		got := fmt.Sprintf("%d %d %v %d %d %d %d %v %v %v %d %v", spec.Interval.Milliseconds(), spec.RepeatFor.Milliseconds(), deletes(spec),
			spec.ReplicationFactor, r.StartTimeDelta.Milliseconds(), r.Seq, r.Version, r.Replicas, r.Sites, spec.Tags, r.ViewID, spec.URI)
		wantURI := "http://c.example/x"
		if tomb {
			wantURI = ""
		}
		want := fmt.Sprintf("%d %d %v %d %d %d %d %v %v %v %d %v", 5000, 20000, tomb,
			3, -500, 2, in.Version, in.Placement().Replicas, in.Placement().Sites, in.Tags(), in.ViewID(), wantURI)
		if got != want {
			t.Errorf("round trip (tombstone %v):\n got %s\nwant %s", tomb, got, want)
		}
	}
}

// TestLongReasonIsCutInTheHeader proves a reason quoting a huge client
// value (a callback URI near the body limit) is cut to MaxReasonBytes in
// the Reason header, with control characters replaced, while the body
// keeps it whole.
func TestLongReasonIsCutInTheHeader(t *testing.T) {
	h := newHarness(t)
	uri := "ftp://x/" + strings.Repeat("é", 100_000) + "\r\nX-Injected: 1"
	r := h.do("POST", "/timers", `{"timing":{"interval":1},"callback":{"http":{"uri":`+strconv.Quote(uri)+`}}}`)
	reason := r.Header.Get(wire.HeaderReason)
	if r.Status != 400 || len(reason) > MaxReasonBytes+3 || !utf8.ValidString(reason) || strings.ContainsAny(reason, "\r\n") {
		t.Fatalf("got %d with a %d-byte Reason, want 400 with at most %d valid bytes and no line breaks", r.Status, len(reason), MaxReasonBytes+3)
	}
	if !strings.Contains(string(r.Body), "X-Injected") {
		t.Errorf("body lost the end of the reason")
	}
}

// TestRepeatedMemberIsRefusedNamingIt proves a client body that repeats a
// member, at the top or nested, is refused with 400 naming it, whichever
// value either copy holds; the original finding was "interval" twice,
// the last silently winning.
func TestRepeatedMemberIsRefusedNamingIt(t *testing.T) {
	h := newHarness(t)
	for _, body := range []string{
		`{"timing":{"interval":1,"interval":100},"callback":{"http":{"uri":"` + cb + `"}}}`,
		`{"timing":{"interval":1},"timing":{"interval":2},"callback":{"http":{"uri":"` + cb + `"}}}`,
		`{"timing":{"interval":1},"callback":{"http":{"uri":"` + cb + `","opaque":"a","opaque":"b"}}}`,
		`{"timing":{"interval":1},"callback":{"http":{"uri":"` + cb + `"}},"statistics":{"tag-info":[{"type":"a","type":"b"}]}}`,
	} {
		r := h.do("POST", "/timers", body)
		if r.Status != 400 || !strings.Contains(r.Header.Get(wire.HeaderReason), "twice") {
			t.Errorf("%s: got %d %q, want 400 naming the repeated member", body, r.Status, r.Header.Get(wire.HeaderReason))
		}
	}
	if got := h.node.Stats().Timers; got != 0 {
		t.Errorf("timers held: got %d, want 0", got)
	}
}
