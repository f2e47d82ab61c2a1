package client

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// TestTimerEncoding proves that a Timer encodes to the API's JSON
// (docs/api.md), that the node's parser reads back the definition given,
// and that decoding the JSON gives the Timer again.
func TestTimerEncoding(t *testing.T) {
	tests := []struct {
		name  string
		timer Timer
		json  string
	}{
		{"one-shot", Timer{Interval: 10 * time.Second, URI: "http://127.0.0.1:9/cb", Opaque: "x"},
			`{"timing":{"interval":10,"repeat-for":0},"callback":{"http":{"uri":"http://127.0.0.1:9/cb","opaque":"x"}}}`},
		{"repeating with rf and tags", Timer{Interval: 2 * time.Second, RepeatFor: time.Minute, URI: "https://cb.example/x",
			Opaque: `{"a":"<b>"}`, ReplicationFactor: 3, Tags: []Tag{{Type: "CALL", Count: 2}, {Type: "REG"}}},
			`{"timing":{"interval":2,"repeat-for":60},"callback":{"http":{"uri":"https://cb.example/x","opaque":"{\"a\":\"\u003cb\u003e\"}"}},` +
				`"reliability":{"replication-factor":3},"statistics":{"tag-info":[{"type":"CALL","count":2},{"type":"REG","count":1}]}}`},
		{"interval 0", Timer{URI: "http://127.0.0.1:9/cb"},
			`{"timing":{"interval":0,"repeat-for":0},"callback":{"http":{"uri":"http://127.0.0.1:9/cb","opaque":""}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.timer)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.json {
				t.Errorf("json = %s, want %s", b, tt.json)
			}
			spec, repl, err := wire.Parse(b)
			if err != nil || repl != nil {
				t.Fatalf("wire.Parse = %v, %v, want a client definition", repl, err)
			}
			if spec.URI != tt.timer.URI || spec.Opaque != tt.timer.Opaque || spec.ReplicationFactor != tt.timer.ReplicationFactor {
				t.Errorf("node reads %+v, want the callback and rf of %+v", spec, tt.timer)
			}
			var back Timer
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			want := tt.timer
			if want.RepeatFor == 0 {
				want.RepeatFor = want.Interval // the same timer: one pop
			}
			for i := range want.Tags {
				want.Tags[i].Count = max(want.Tags[i].Count, 1)
			}
			if !reflect.DeepEqual(back, want) {
				t.Errorf("decoded %+v, want %+v", back, want)
			}
		})
	}
}

// TestTimerValidate proves that a definition the API would refuse, or the
// encoding would alter, is refused before anything is sent, with an error
// that wraps ErrInvalid and names the field.
func TestTimerValidate(t *testing.T) {
	ok := Timer{Interval: time.Second, URI: "http://127.0.0.1:9/cb"}
	tests := []struct {
		name   string
		change func(*Timer)
		want   string
	}{
		{"fractional interval", func(t *Timer) { t.Interval = 1500 * time.Millisecond }, "interval 1.5s is not a whole number of seconds"},
		{"negative interval", func(t *Timer) { t.Interval = -time.Second }, "interval -1s is not between"},
		{"interval too long", func(t *Timer) { t.Interval = MaxTiming + time.Second }, "interval"},
		{"fractional repeat-for", func(t *Timer) { t.RepeatFor = time.Millisecond }, "repeat-for 1ms"},
		{"repeat-for without interval", func(t *Timer) { t.Interval, t.RepeatFor = 0, time.Second }, "needs an interval"},
		{"no uri", func(t *Timer) { t.URI = "" }, "callback URI is empty"},
		{"opaque not utf-8", func(t *Timer) { t.Opaque = "\xff" }, "opaque data is not valid UTF-8"},
		{"surrogate in opaque", func(t *Timer) { t.Opaque = "\xed\xa0\x80" }, "opaque data is not valid UTF-8"},
		{"rf 17", func(t *Timer) { t.ReplicationFactor = 17 }, "replication factor 17"},
		{"rf negative", func(t *Timer) { t.ReplicationFactor = -1 }, "replication factor -1"},
		{"tag without type", func(t *Timer) { t.Tags = []Tag{{Count: 1}} }, "tag 0: the type is empty"},
		{"tag count negative", func(t *Timer) { t.Tags = []Tag{{Type: "A", Count: -1}} }, "tag 0 (A): count -1"},
		{"too many tags", func(t *Timer) { t.Tags = make([]Tag, wire.MaxTags+1) }, "more than 32"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid timer: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timer := ok
			tt.change(&timer)
			err := timer.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want ErrInvalid with %q", err, tt.want)
			}
			if _, err := json.Marshal(timer); !errors.Is(err, ErrInvalid) {
				t.Errorf("json.Marshal = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestChosenIDs proves what Create chooses: 32 hex digits the node reads
// as a timer ID, the top bit of the unique ID set (never an ID a node
// issues) and an empty bloom filter (naming no node), different each time.
func TestChosenIDs(t *testing.T) {
	seen := map[ID]bool{}
	for range 1000 {
		id, err := newID()
		if err != nil {
			t.Fatal(err)
		}
		unique, bloom, err := wire.ParseWireID(string(id))
		if err != nil || unique>>63 != 1 || bloom != 0 {
			t.Fatalf("newID = %s: unique %016x bloom %016x err %v, want the top bit set and bloom 0", id, unique, bloom, err)
		}
		if seen[id] {
			t.Fatalf("newID repeated %s", id)
		}
		seen[id] = true
		if id.Unique() != wire.FormatID(unique) {
			t.Errorf("Unique = %s, want %s", id.Unique(), wire.FormatID(unique))
		}
	}
}

// TestParseID proves that IDs are checked and normalized to lower case,
// and that anything else is refused with ErrInvalid.
func TestParseID(t *testing.T) {
	id, err := ParseID("ABCDEF0123456789abcdef0123456789")
	if err != nil || id != "abcdef0123456789abcdef0123456789" {
		t.Fatalf("ParseID = %q, %v, want the lower-case ID", id, err)
	}
	for _, bad := range []string{"", "abc", "+bcdef0123456789abcdef0123456789", "abcdef0123456789abcdef012345678g", "abcdef0123456789abcdef01234567890"} {
		if _, err := ParseID(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseID(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
