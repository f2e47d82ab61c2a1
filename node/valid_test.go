package node

import (
	"encoding/json"
	"strings"
	"testing"
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
// walker of codec.go reads only bodies this accepted, so one it accepts
// and encoding/json refuses would reach the walker malformed.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validJSONCases {
		f.Add([]byte(c))
	}
	f.Add(EncodeReplication(newTimer(1, 1, Spec{Interval: 1000, URI: "http://h/cb", Opaque: "o", RF: 2}, 0, 0, &Placement{Replicas: []string{"a:1", "b:2"}}, 1, hostTable{}), 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json.Valid says %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	body := EncodeReplication(newTimer(1, 1, Spec{Interval: 3_600_000, RepeatFor: 3_600_000, URI: "http://client.example/cb", Opaque: "x", RF: 2}, 0, 0, &Placement{Replicas: []string{"10.0.0.1:7253", "10.0.0.2:7253"}}, 1, hostTable{}), 0)
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
