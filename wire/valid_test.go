package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// validJSONCases are inputs at the edges of the grammar, each checked
// against encoding/json.Valid.
var validJSONCases = []string{
	``, ` `, `{}`, ` [ ] `, `{"a":1}`, `{"a":1,}`, `{,}`, `[1,]`, `[,1]`, `{"a" 1}`, `{"a":}`, `{1:2}`,
	`"x"`, `"\u00e9\n\t\"\\\/\b\f\r"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\nb\"", "\"\x7f\xff\"", `"abc`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `-12.5e+3`, `1 2`,
	`true`, `tru`, `false`, `null`, `nul`, `nullx`, `[true,false,null]`,
	`{"a":{"b":[{"c":"d"}]}}`, `{"a":1}}`, `[[[]]]`, "\t{\r\n}\n",
	strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
	strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
	strings.Repeat(`{"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth),
	strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
}

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range validJSONCases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%.40q) = %v, encoding/json.Valid says %v", c, got, want)
		}
	}
}

// FuzzValidJSON holds validJSON to encoding/json.Valid on any input: the
// walker of json.go reads only bodies this accepted, so one it accepts
// and encoding/json refuses would reach the walker malformed.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validJSONCases {
		f.Add([]byte(c))
	}
	f.Add(AppendReplication(nil, &Timer{Interval: time.Second, RepeatFor: time.Second, URI: "http://h/cb", Opaque: "o", ReplicationFactor: 2}, &Replication{ViewID: 1, Replicas: []string{"a:1", "b:2"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json.Valid says %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	body := AppendReplication(nil, &Timer{Interval: time.Hour, RepeatFor: time.Hour, URI: "http://client.example/cb", Opaque: "x", ReplicationFactor: 2}, &Replication{Version: 1, ViewID: 1, Replicas: []string{"10.0.0.1:7253", "10.0.0.2:7253"}})
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			if !validJSON(body) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if !json.Valid(body) {
				b.Fatal("refused")
			}
		}
	})
}

// strictJSONCases are bodies at the edges of the member-name rule.
var strictJSONCases = []string{
	`{"a":1,"a":2}`, `{"a":1,"b":{"a":2}}`, `{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1}]`, `[{"a":1,"a":1}]`,
	`{"a":1,"\u0061":2}`, `{"\u00e9":1,"é":2}`, `{"\ud800":1,"\udfff":2}`, "{\"\xff\":1,\"\xfe\":2}",
	`{"a":1,"A":2}`, `{"":1,"":2}`, `{"a":[{"b":1}],"c":[{"b":1}]}`, `{"a":1,"b":2,"a":`,
	`{` + strings.Repeat(`"k":0,`, 3) + `"z":0}`,
	manyMembers(maxNamesScanned+5, -1), manyMembers(maxNamesScanned+5, 3), manyMembers(maxNamesScanned+5, maxNamesScanned+2),
}

// manyMembers is an object of n members "m0".."m<n-1>", the last named
// as member dup when dup >= 0.
func manyMembers(n, dup int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		name := i
		if i == n-1 && dup >= 0 {
			name = dup
		}
		fmt.Fprintf(&b, `"m%d":%d,`, name, i)
	}
	return strings.TrimSuffix(b.String(), ",") + "}"
}

// repeatedMember is the reference CheckJSON is held to: the first member
// name an object repeats, as encoding/json's tokenizer decodes names, and
// whether b is valid JSON at all.
func repeatedMember(b []byte) (dup string, found, valid bool) {
	if !json.Valid(b) {
		return "", false, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		object bool
		names  map[string]bool
		key    bool // the next token of an object is a name
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false, true
		}
		top := (*level)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if name, ok := tok.(string); ok {
				if top.names[name] {
					return name, true, true
				}
				top.names[name] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, &level{object: true, names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, &level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// TestStrictJSONRefusesRepeatedMembers tabulates CheckJSON against its
// reference: a member repeated in one object, at any depth, however
// escaped, is refused naming it; the same name in two objects is not.
func TestStrictJSONRefusesRepeatedMembers(t *testing.T) {
	for _, c := range append(strictJSONCases, validJSONCases...) {
		checkStrictJSON(t, []byte(c))
	}
	if err := CheckJSON([]byte(`{"timing":{"interval":1,"interval":2}}`)); err == nil || !strings.Contains(err.Error(), `"interval"`) {
		t.Errorf("repeated interval: got %v, want an error naming it", err)
	}
}

// TestStrictJSONAllocatesNothing holds CheckJSON to no allocation for a
// body as nodes write them: it reads every body a node takes.
func TestStrictJSONAllocatesNothing(t *testing.T) {
	body := AppendReplication(nil, &Timer{Interval: time.Hour, RepeatFor: time.Hour, URI: "http://client.example/cb", Opaque: "x", ReplicationFactor: 2}, &Replication{Version: 1, ViewID: 1, Replicas: []string{"10.0.0.1:7253", "10.0.0.2:7253"}})
	if n := testing.AllocsPerRun(100, func() {
		if err := CheckJSON(body); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CheckJSON of a replication body: %v allocations, want 0", n)
	}
}

// checkStrictJSON fails t unless CheckJSON agrees with the reference on b.
func checkStrictJSON(t *testing.T, b []byte) {
	t.Helper()
	dup, found, valid := repeatedMember(b)
	err := CheckJSON(b)
	switch {
	case !valid:
		if err != ErrNotJSON {
			t.Fatalf("CheckJSON(%.60q) = %v, want ErrNotJSON (encoding/json refuses it)", b, err)
		}
	case found:
		var bad *BadRequestError
		if !errors.As(err, &bad) || !strings.Contains(bad.Reason, fmt.Sprintf("%.100q", dup)) {
			t.Fatalf("CheckJSON(%.60q) = %v, want a 400 naming %q", b, err, dup)
		}
	case err != nil:
		t.Fatalf("CheckJSON(%.60q) = %v, want nil", b, err)
	}
}

// FuzzStrictJSON holds strictJSON to its reference on any input: the
// syntax to encoding/json.Valid, the repeated member to the first that
// encoding/json's tokenizer meets.
func FuzzStrictJSON(f *testing.F) {
	for _, c := range append(strictJSONCases, validJSONCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkStrictJSON(t, b) })
}

func BenchmarkStrictJSON(b *testing.B) {
	body := AppendReplication(nil, &Timer{Interval: time.Hour, RepeatFor: time.Hour, URI: "http://client.example/cb", Opaque: "x", ReplicationFactor: 2}, &Replication{Version: 1, ViewID: 1, Replicas: []string{"10.0.0.1:7253", "10.0.0.2:7253"}})
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			if !validJSON(body) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("strictJSON", func(b *testing.B) {
		for b.Loop() {
			if CheckJSON(body) != nil {
				b.Fatal("refused")
			}
		}
	})
}
